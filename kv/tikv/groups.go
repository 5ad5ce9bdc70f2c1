package tikv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	rmpb "github.com/pingcap/kvproto/pkg/resource_manager"
	pd "github.com/tikv/pd/client"

	"github.com/coopkv/coopkv/resource"
)

// pdUnlimited is the fill rate PD gives an unlimited group (its default
// group's): resource.GroupConfig's RUPerSec 0.
const pdUnlimited = math.MaxInt32

// resourceManager is the part of PD's resource-manager client the store
// uses (pd.ResourceManagerClient).
type resourceManager interface {
	ListResourceGroups(ctx context.Context, opts ...pd.GetResourceGroupOption) ([]*rmpb.ResourceGroup, error)
	AddResourceGroup(ctx context.Context, group *rmpb.ResourceGroup) (string, error)
	ModifyResourceGroup(ctx context.Context, group *rmpb.ResourceGroup) (string, error)
	DeleteResourceGroup(ctx context.Context, name string) (string, error)
}

// ResourceGroups manages the cluster's resource groups — PD's resource
// manager, which TiKV's resource control enforces — in resource.GroupConfig
// terms, one to one: RUPerSec is the group's RU fill rate (the same RU: a
// read request 1/8, 64 KiB read 1, 3 ms of CPU 1), Burstable an unlimited
// burst (PD's burst limit -1; otherwise the burst is one second's worth,
// the fill rate, as TiDB sets it), Priority the group's priority (the same
// values: LOW 1, MEDIUM 8, HIGH 16). RUPerSec 0, unlimited, is PD's
// unlimited fill rate. The store's client-side read pool schedules its
// coprocessor requests by the same groups: changes made here apply there
// too, and List brings the pool's groups up to date with PD's.
type ResourceGroups struct {
	pd    resourceManager
	local *resource.Manager
}

// ResourceGroups returns the cluster's resource groups.
func (s *Store) ResourceGroups() *ResourceGroups { return s.rg }

// Put creates the group cfg.Name or replaces its config, at PD. An invalid
// config (resource.ErrInvalidGroup, naming the field) changes nothing; so
// does a fractional RUPerSec, which PD cannot hold.
func (g *ResourceGroups) Put(ctx context.Context, cfg resource.GroupConfig) error {
	old, had := g.local.Get(cfg.Name)
	if err := g.local.Put(cfg); err != nil { // validates it
		return fmt.Errorf("tikv: put group %q: %w", cfg.Name, err)
	}
	err := g.put(ctx, cfg)
	if err != nil { // as it was
		if had {
			_ = g.local.Put(old)
		} else {
			_ = g.local.Delete(cfg.Name)
		}
		return fmt.Errorf("tikv: put group %q: %w", cfg.Name, err)
	}
	return nil
}

func (g *ResourceGroups) put(ctx context.Context, cfg resource.GroupConfig) error {
	pb, err := groupToPB(cfg)
	if err != nil {
		return err
	}
	all, err := g.pd.ListResourceGroups(ctx)
	if err != nil {
		return err
	}
	exists := slices.ContainsFunc(all, func(x *rmpb.ResourceGroup) bool { return x.GetName() == cfg.Name })
	if exists {
		_, err = g.pd.ModifyResourceGroup(ctx, pb)
	} else {
		_, err = g.pd.AddResourceGroup(ctx, pb)
	}
	return err
}

// Delete removes a group at PD; requests that name it then run as the
// default group. The default group cannot be deleted
// (resource.ErrDefaultGroup).
func (g *ResourceGroups) Delete(ctx context.Context, name string) error {
	if name == resource.DefaultGroup {
		return fmt.Errorf("tikv: delete group: %w", resource.ErrDefaultGroup)
	}
	if _, err := g.pd.DeleteResourceGroup(ctx, name); err != nil {
		return fmt.Errorf("tikv: delete group %q: %w", name, err)
	}
	if err := g.local.Delete(name); err != nil && !errors.Is(err, resource.ErrNoGroup) {
		return fmt.Errorf("tikv: delete group %q: %w", name, err)
	}
	return nil
}

// List returns PD's groups by name, and makes the client's read pool
// schedule by them. A group PD holds in raw-resource mode (no RU
// settings) is listed as unlimited.
func (g *ResourceGroups) List(ctx context.Context) ([]resource.GroupConfig, error) {
	all, err := g.pd.ListResourceGroups(ctx)
	if err != nil {
		return nil, fmt.Errorf("tikv: list groups: %w", err)
	}
	out := make([]resource.GroupConfig, 0, len(all))
	for _, pb := range all {
		cfg := groupFromPB(pb)
		_ = g.local.Put(cfg) // PD's names may be longer than coopkv's; such a group is only listed
		out = append(out, cfg)
	}
	slices.SortFunc(out, func(a, b resource.GroupConfig) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// groupToPB is cfg as PD holds it.
func groupToPB(cfg resource.GroupConfig) (*rmpb.ResourceGroup, error) {
	fill := uint64(pdUnlimited)
	if cfg.RUPerSec != 0 {
		if cfg.RUPerSec != math.Trunc(cfg.RUPerSec) || cfg.RUPerSec < 1 || cfg.RUPerSec >= pdUnlimited {
			return nil, fmt.Errorf("%w: RUPerSec %v is not a whole number of RU/s from 1 to %d, as PD holds them", resource.ErrInvalidGroup, cfg.RUPerSec, pdUnlimited-1)
		}
		fill = uint64(cfg.RUPerSec)
	}
	burst := int64(fill)
	if cfg.Burstable {
		burst = -1
	}
	pri := cfg.Priority
	if pri == 0 {
		pri = resource.PriorityMedium
	}
	return &rmpb.ResourceGroup{
		Name: cfg.Name,
		Mode: rmpb.GroupMode_RUMode,
		RUSettings: &rmpb.GroupRequestUnitSettings{
			RU: &rmpb.TokenBucket{Settings: &rmpb.TokenLimitSettings{FillRate: fill, BurstLimit: burst}},
		},
		Priority: uint32(pri),
	}, nil
}

// groupFromPB is a PD group as a resource.GroupConfig.
func groupFromPB(pb *rmpb.ResourceGroup) resource.GroupConfig {
	cfg := resource.GroupConfig{Name: pb.GetName(), Priority: resource.Priority(pb.GetPriority())}
	if cfg.Priority == 0 {
		cfg.Priority = resource.PriorityMedium
	}
	st := pb.GetRUSettings().GetRU().GetSettings()
	if st == nil {
		cfg.Burstable = true
		return cfg
	}
	if st.GetFillRate() < pdUnlimited {
		cfg.RUPerSec = float64(st.GetFillRate())
	}
	cfg.Burstable = st.GetBurstLimit() < 0
	return cfg
}

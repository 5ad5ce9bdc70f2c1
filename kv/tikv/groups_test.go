package tikv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	rmpb "github.com/pingcap/kvproto/pkg/resource_manager"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	pd "github.com/tikv/pd/client"

	"github.com/coopkv/coopkv/resource"
)

// fakePD is PD's resource manager as a map, refusing what PD refuses (an
// Add of a group that exists, a Modify or Delete of one that does not).
type fakePD struct {
	mu     sync.Mutex
	groups map[string]*rmpb.ResourceGroup
	calls  []string
	fail   error // every call fails with it when set
}

func newFakePD() *fakePD {
	def, _ := groupToPB(resource.GroupConfig{Name: resource.DefaultGroup, Burstable: true})
	return &fakePD{groups: map[string]*rmpb.ResourceGroup{resource.DefaultGroup: def}}
}

func (f *fakePD) call(name string) error {
	f.calls = append(f.calls, name)
	return f.fail
}

func (f *fakePD) ListResourceGroups(context.Context, ...pd.GetResourceGroupOption) ([]*rmpb.ResourceGroup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("list"); err != nil {
		return nil, err
	}
	var out []*rmpb.ResourceGroup
	for _, g := range f.groups {
		out = append(out, g)
	}
	return out, nil
}

func (f *fakePD) AddResourceGroup(_ context.Context, g *rmpb.ResourceGroup) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("add " + g.Name); err != nil {
		return "", err
	}
	if _, ok := f.groups[g.Name]; ok {
		return "", fmt.Errorf("group %s already exists", g.Name)
	}
	f.groups[g.Name] = g
	return "Success!", nil
}

func (f *fakePD) ModifyResourceGroup(_ context.Context, g *rmpb.ResourceGroup) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("modify " + g.Name); err != nil {
		return "", err
	}
	if _, ok := f.groups[g.Name]; !ok {
		return "", fmt.Errorf("group %s does not exist", g.Name)
	}
	f.groups[g.Name] = g
	return "Success!", nil
}

func (f *fakePD) DeleteResourceGroup(_ context.Context, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.call("delete " + name); err != nil {
		return "", err
	}
	if _, ok := f.groups[name]; !ok {
		return "", fmt.Errorf("group %s does not exist", name)
	}
	delete(f.groups, name)
	return "Success!", nil
}

func resourceGroup(name string, ru float64) resource.GroupConfig {
	return resource.GroupConfig{Name: name, RUPerSec: ru, Priority: resource.PriorityMedium}
}

func TestGroupToPB_OneToOne(t *testing.T) {
	for _, c := range []struct {
		name       string
		cfg        resource.GroupConfig
		fill       uint64
		burst      int64
		priority   uint32
		roundTrips bool
	}{
		{"limited", resource.GroupConfig{Name: "g", RUPerSec: 500, Priority: resource.PriorityHigh}, 500, 500, 16, true},
		{"burstable low", resource.GroupConfig{Name: "g", RUPerSec: 100, Burstable: true, Priority: resource.PriorityLow}, 100, -1, 1, true},
		{"unlimited", resource.GroupConfig{Name: "g", Burstable: true, Priority: resource.PriorityMedium}, math.MaxInt32, -1, 8, true},
		{"priority 0 is medium", resource.GroupConfig{Name: "g", RUPerSec: 1}, 1, 1, 8, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			pb, err := groupToPB(c.cfg)
			require.NoError(t, err)
			assert.Equal(t, "g", pb.Name)
			assert.Equal(t, rmpb.GroupMode_RUMode, pb.Mode)
			st := pb.RUSettings.RU.Settings
			assert.Equal(t, c.fill, st.FillRate, "RU/s is the fill rate")
			assert.Equal(t, c.burst, st.BurstLimit, "burstable is -1, else one second's worth")
			assert.Equal(t, c.priority, pb.Priority, "TiKV's priorities are coopkv's")
			if c.roundTrips {
				assert.Equal(t, c.cfg, groupFromPB(pb))
			}
		})
	}
	_, err := groupToPB(resource.GroupConfig{Name: "g", RUPerSec: 2.5})
	assert.ErrorIs(t, err, resource.ErrInvalidGroup, "PD holds whole RU/s")
	assert.ErrorContains(t, err, "RUPerSec 2.5")
	assert.Equal(t, resource.GroupConfig{Name: "raw", Burstable: true, Priority: resource.PriorityMedium},
		groupFromPB(&rmpb.ResourceGroup{Name: "raw", Mode: rmpb.GroupMode_RawMode}), "a raw-mode group is unlimited")
}

// fakeGroups is a ResourceGroups on a fake PD and a pool's manager.
func fakeGroups() (*ResourceGroups, *fakePD, *resource.Manager) {
	f, local := newFakePD(), resource.NewManager()
	return &ResourceGroups{pd: f, local: local}, f, local
}

func TestResourceGroups_PutDeleteListAtPD(t *testing.T) {
	g, f, local := fakeGroups()
	ctx := context.Background()

	require.NoError(t, g.Put(ctx, resourceGroup("web", 300)))
	require.NoError(t, g.Put(ctx, resource.GroupConfig{Name: "web", RUPerSec: 400, Burstable: true}))
	assert.Equal(t, []string{"list", "add web", "list", "modify web"}, f.calls, "created, then replaced")
	assert.EqualValues(t, 400, f.groups["web"].RUSettings.RU.Settings.FillRate)
	cfg, ok := local.Get("web")
	require.True(t, ok, "the client's pool schedules by it")
	assert.True(t, cfg.Burstable)

	list, err := g.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, resource.DefaultGroup, list[0].Name, "by name")
	assert.Equal(t, resource.GroupConfig{Name: "web", RUPerSec: 400, Burstable: true, Priority: resource.PriorityMedium}, list[1])

	require.NoError(t, g.Delete(ctx, "web"))
	assert.NotContains(t, f.groups, "web")
	_, ok = local.Get("web")
	assert.False(t, ok)
	assert.ErrorIs(t, g.Delete(ctx, resource.DefaultGroup), resource.ErrDefaultGroup)
	assert.Error(t, g.Delete(ctx, "web"), "PD's error for a missing group")
}

func TestResourceGroups_BadInputChangesNothing(t *testing.T) {
	g, f, local := fakeGroups()
	ctx := context.Background()
	require.NoError(t, g.Put(ctx, resourceGroup("web", 300)))
	f.calls = nil

	err := g.Put(ctx, resource.GroupConfig{Name: "web", RUPerSec: -1, Priority: 3})
	require.ErrorIs(t, err, resource.ErrInvalidGroup)
	assert.ErrorContains(t, err, "RUPerSec")
	assert.ErrorContains(t, err, "Priority", "every problem at once")
	err = g.Put(ctx, resourceGroup("web", 0.5))
	require.ErrorIs(t, err, resource.ErrInvalidGroup, "fractional: PD cannot hold it")
	assert.Empty(t, f.calls, "nothing reached PD")
	cfg, _ := local.Get("web")
	assert.EqualValues(t, 300, cfg.RUPerSec, "the pool's group is as it was")

	f.fail = errors.New("pd unavailable")
	require.ErrorContains(t, g.Put(ctx, resourceGroup("web", 900)), "pd unavailable")
	require.Error(t, g.Put(ctx, resourceGroup("new", 900)))
	cfg, _ = local.Get("web")
	assert.EqualValues(t, 300, cfg.RUPerSec, "a failed Put at PD is undone locally")
	_, ok := local.Get("new")
	assert.False(t, ok)
}

package resource

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// DefaultGroup is the group of requests that name none, or a group that
// does not exist. It always exists: unlimited, burstable, medium priority.
const DefaultGroup = "default"

const (
	// MaxGroups bounds the number of groups, default included, so that a
	// loop that creates groups by mistake cannot grow memory without bound.
	MaxGroups = 1024
	// MaxNameLen is the longest group name, in bytes.
	MaxNameLen = 64
	// UnlimitedShare is the share, in RU/s, an unlimited group (RUPerSec
	// 0, as default) competes with for fair order.
	UnlimitedShare = 10000
	// MinRUPerSec and MaxRUPerSec bound a group's RU/s (but for 0,
	// unlimited): the token bucket counts micro-RU in an int64.
	MinRUPerSec = 0.001
	MaxRUPerSec = 1e9
)

// GroupConfig configures a resource group.
type GroupConfig struct {
	Name string `json:"name"`
	// RUPerSec is the group's share and, unless Burstable, its limit, in
	// request units per second; 0 = unlimited (it then competes as if its
	// share were UnlimitedShare).
	RUPerSec float64 `json:"ru_per_sec"`
	// Burstable lets the group use more than RUPerSec when the pool has
	// spare capacity; a group that is not is held to RUPerSec by a token
	// bucket holding one second's worth.
	Burstable bool `json:"burstable"`
	// Priority is the group's class; 0 = PriorityMedium. A higher class
	// always runs before a lower one.
	Priority Priority `json:"priority"`
	// Runaway is the rule for the group's runaway reads; nil = none. Put
	// keeps a copy of it.
	Runaway *RunawayRule `json:"runaway,omitempty"`
}

// Errors of the Manager.
var (
	// ErrInvalidGroup is returned (wrapped, naming the field) by Put for a
	// config that cannot be used.
	ErrInvalidGroup = errors.New("resource: invalid group")
	// ErrTooManyGroups is returned by Put when MaxGroups groups exist.
	ErrTooManyGroups = errors.New("resource: too many groups")
	// ErrNoGroup is returned by Delete for a group that does not exist.
	ErrNoGroup = errors.New("resource: no such group")
	// ErrDefaultGroup is returned by Delete of the default group.
	ErrDefaultGroup = errors.New("resource: the default group cannot be deleted")
	// ErrInvalidRunaway is returned (wrapped, naming the field) by
	// RunawayRule.Validate, and so by Put, for a rule that cannot be used.
	ErrInvalidRunaway = errors.New("resource: invalid runaway rule")
)

// validate reports every problem of c at once, each naming its field.
func (c *GroupConfig) validate() error {
	var errs []error
	switch {
	case c.Name == "":
		errs = append(errs, fmt.Errorf("%w: Name is empty", ErrInvalidGroup))
	case len(c.Name) > MaxNameLen:
		errs = append(errs, fmt.Errorf("%w: Name is %d bytes, more than %d", ErrInvalidGroup, len(c.Name), MaxNameLen))
	default:
		for _, r := range c.Name {
			if !unicode.IsPrint(r) || r == unicode.ReplacementChar {
				errs = append(errs, fmt.Errorf("%w: Name %q has a character that is not printable", ErrInvalidGroup, c.Name))
				break
			}
		}
	}
	if math.IsNaN(c.RUPerSec) || c.RUPerSec != 0 && (c.RUPerSec < MinRUPerSec || c.RUPerSec > MaxRUPerSec) {
		errs = append(errs, fmt.Errorf("%w: RUPerSec %v is neither 0 (unlimited) nor within [%v, %v]", ErrInvalidGroup, c.RUPerSec, MinRUPerSec, MaxRUPerSec))
	}
	if c.Priority != 0 && !c.Priority.Valid() {
		errs = append(errs, fmt.Errorf("%w: Priority %d is not low (1), medium (8) or high (16)", ErrInvalidGroup, int(c.Priority)))
	}
	if err := c.Runaway.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c GroupConfig) withDefaults() GroupConfig {
	if c.Priority == 0 {
		c.Priority = PriorityMedium
	}
	return c
}

// Group is a resource group's live state. A request resolves its group once
// (Manager.Resolve); the scheduler and the accountant then work on the
// pointer. After a Delete the object lives on for the tasks that hold it,
// which run by the default group's config.
type Group struct {
	m    *Manager
	name string
	cfg  atomic.Pointer[GroupConfig]
	gone atomic.Bool // deleted

	// Charged after every step, from any goroutine.
	ru     atomic.Uint64 // micro-RU consumed in all
	vtime  atomic.Uint64 // virtual time, ns: RU / share
	tokens atomic.Int64  // micro-RU in the bucket (not burstable); may go negative
	window ruWindow

	// Under the scheduler's lock (the pool's).
	lastRefill time.Duration
	refilled   bool
	occupancy  int  // queued + held + running tasks
	active     bool // in the scheduler's list of active groups
	everActive bool
	idleSince  time.Duration // pool time its occupancy last fell to 0

	// Written under the scheduler's lock, read by Stats without it.
	queued, held, running atomic.Int64
	throttled             atomic.Int64 // ns its tasks were held by the limit
	rejected              atomic.Int64
}

// Name is the group's name.
func (g *Group) Name() string { return g.name }

// Config is the group's config in force: the default group's once the
// group has been deleted.
func (g *Group) Config() GroupConfig { return g.config().clone() }

// config is the config in force, shared: the scheduler's, which must not
// copy the runaway rule at every step.
func (g *Group) config() *GroupConfig {
	if g.gone.Load() {
		return g.m.def.cfg.Load()
	}
	return g.cfg.Load()
}

// Runaway is the runaway rule in force for the group's reads (the default
// group's once the group has been deleted); nil = none. It is one atomic
// load, for every step: Put swaps the config, so a new rule applies from
// each read's next step. The rule is shared: do not modify it.
func (g *Group) Runaway() *RunawayRule { return g.config().Runaway }

// share is the RU/s the group's virtual time is divided by.
func share(c *GroupConfig) float64 {
	if c.RUPerSec > 0 {
		return c.RUPerSec
	}
	return UnlimitedShare
}

// Manager holds a store's resource groups. Its methods are safe for
// concurrent use; changes apply to tasks queued after the call.
type Manager struct {
	mu     sync.RWMutex
	groups map[string]*Group
	// watchers are told of every change of a group's config or a
	// deletion, after mu is released (Scheduler.SetKick).
	watchers []func()
	def      *Group
	// bg is the group of the store's own background work (Background).
	bg    *Group
	clock func() time.Duration // for the RU window; injected by tests
}

// NewManager returns a manager holding only the default group.
func NewManager() *Manager {
	epoch := time.Now()
	m := &Manager{groups: map[string]*Group{}, clock: func() time.Duration { return time.Since(epoch) }}
	m.def = m.newGroup(GroupConfig{Name: DefaultGroup, Burstable: true, Priority: PriorityMedium})
	m.groups[DefaultGroup] = m.def
	m.bg = m.newGroup(GroupConfig{Name: backgroundGroup, RUPerSec: backgroundShare, Burstable: true, Priority: PriorityLow})
	return m
}

// backgroundGroup names the Background group in its figures; it is not a
// group a request can name (Put's names are looked up in the map, where it
// is not).
const backgroundGroup = "(background)"

// backgroundShare is the Background group's share in RU/s: a
// ten-thousandth of an unlimited group's, so that in its class it runs
// only when no tenant's work is ready.
const backgroundShare = 1

// Background is the group of the store's own background work (warming its
// caches): a task spawned with it as readpool.SpawnOptions.Tag runs in the
// lowest class, behind every tenant's work there, and its steps are
// charged to it, so to no tenant. It is in no list (Groups, Stats) and
// cannot be named by a request, reconfigured or deleted.
func (m *Manager) Background() *Group { return m.bg }

func (m *Manager) newGroup(c GroupConfig) *Group {
	g := &Group{m: m, name: c.Name}
	g.cfg.Store(&c)
	g.tokens.Store(int64(c.RUPerSec * microRU)) // a full bucket
	return g
}

// Put creates the group cfg.Name or replaces its config. A group that goes
// from burstable to limited starts with a full bucket. The default group may be
// reconfigured too (as TiDB allows), e.g. given a share; it cannot be
// deleted.
func (m *Manager) Put(cfg GroupConfig) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	cfg.Runaway = cfg.Runaway.clone() // the caller's rule may change after
	m.mu.Lock()
	if g, ok := m.groups[cfg.Name]; ok {
		old := g.cfg.Swap(&cfg)
		if old.Burstable && !cfg.Burstable {
			g.tokens.Store(int64(cfg.RUPerSec * microRU))
		}
		m.changedLocked()
		return nil
	}
	defer m.mu.Unlock()
	if len(m.groups) >= MaxGroups {
		return fmt.Errorf("%w: %d exist (MaxGroups); delete one first", ErrTooManyGroups, len(m.groups))
	}
	m.groups[cfg.Name] = m.newGroup(cfg)
	return nil
}

// Delete removes a group. Its queued and running tasks finish, by the
// default group's config; requests that name it later run as default.
func (m *Manager) Delete(name string) error {
	if name == DefaultGroup {
		return ErrDefaultGroup
	}
	m.mu.Lock()
	g, ok := m.groups[name]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrNoGroup, name)
	}
	g.gone.Store(true)
	delete(m.groups, name)
	m.changedLocked()
	return nil
}

// changedLocked tells the watchers that a group changed (tasks it holds
// back for its limit may be free now), and releases mu first: a watcher
// may take a pool's lock, under which the scheduler reads groups.
func (m *Manager) changedLocked() {
	ws := m.watchers
	m.mu.Unlock()
	for _, w := range ws {
		w()
	}
}

// watch adds f to the watchers of changes.
func (m *Manager) watch(f func()) {
	m.mu.Lock()
	m.watchers = append(m.watchers, f)
	m.mu.Unlock()
}

// Get returns a group's config.
func (m *Manager) Get(name string) (GroupConfig, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[name]
	if !ok {
		return GroupConfig{}, false
	}
	return g.cfg.Load().clone(), true
}

// List returns every group's config, by name.
func (m *Manager) List() []GroupConfig {
	m.mu.RLock()
	out := make([]GroupConfig, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, g.cfg.Load().clone())
	}
	m.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Resolve returns the group a request naming name runs in: the default
// group for "" or a group that does not exist. Resolve once per request.
func (m *Manager) Resolve(name string) *Group {
	if name == "" || name == DefaultGroup {
		return m.def
	}
	m.mu.RLock()
	g, ok := m.groups[name]
	m.mu.RUnlock()
	if !ok {
		return m.def
	}
	return g
}

// Default returns the default group.
func (m *Manager) Default() *Group { return m.def }

func (m *Manager) all() []*Group {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Group, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// refill adds the tokens earned since the last refill, up to one second's
// worth.
func (g *Group) refill(cfg *GroupConfig, now time.Duration) {
	if !g.refilled {
		g.refilled, g.lastRefill = true, now
		return
	}
	dt := now - g.lastRefill
	rate := cfg.RUPerSec * microRU // micro-RU per second
	add := int64(rate * dt.Seconds())
	if add <= 0 {
		return // less than a micro-RU earned: keep the time for the next refill
	}
	// Advance by the time the added tokens took, keeping the remainder.
	g.lastRefill += time.Duration(float64(add) / rate * float64(time.Second))
	capacity := int64(rate)
	for {
		t := g.tokens.Load()
		n := min(t+add, capacity)
		if n <= t || g.tokens.CompareAndSwap(t, n) {
			return
		}
	}
}

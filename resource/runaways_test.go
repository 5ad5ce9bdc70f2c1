package resource

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a settable clock for Runaways.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newRunaways(t *testing.T, maxWatches int) (*Runaways, *fakeClock) {
	t.Helper()
	c := &fakeClock{now: t0}
	return NewRunaways(c.Now, maxWatches), c
}

// groupCounts returns group's counts in s (zero if absent).
func groupCounts(s RunawayStats, group string) RunawayGroupStats {
	for _, g := range s.Groups {
		if g.Group == group {
			return g
		}
	}
	return RunawayGroupStats{Group: group}
}

// Each action: nothing while the read is within its limits; the action,
// newly, on the step that crosses one; the action, not newly, on every
// step after; the read counted once, under its action.
func TestRunaways_EachAction(t *testing.T) {
	ms := time.Millisecond
	for _, a := range []RunawayAction{RunawayDryRun, RunawayCooldown, RunawayKill} {
		t.Run(string(a), func(t *testing.T) {
			r, _ := newRunaways(t, 0)
			rule := &RunawayRule{ExecElapsed: 10 * ms, RowsScanned: 1000, Action: a}
			rd := r.NewRead("g", WatchKey{TaskID: 1})
			assert.Empty(t, rd.Action())

			for _, step := range []struct {
				exec  time.Duration
				rows  int64
				want  RunawayAction
				newly bool
			}{
				{1 * ms, 100, "", false},
				{10 * ms, 1000, "", false}, // at the limits, not past them
				{11 * ms, 1000, a, true},
				{12 * ms, 5000, a, false},
				{time.Second, 1 << 30, a, false},
			} {
				got, newly := r.Observe(&rd, rule, step.exec, step.rows)
				assert.Equal(t, step.want, got, "after %v, %d rows", step.exec, step.rows)
				assert.Equal(t, step.newly, newly, "after %v, %d rows", step.exec, step.rows)
				assert.Equal(t, step.want, rd.Action())
			}
			g := groupCounts(r.Stats(), "g")
			assert.Equal(t, int64(1), g.Count(a), "counted once")
			assert.Equal(t, RunawayGroupStats{Group: "g", DryRun: g.DryRun, Cooldown: g.Cooldown, Kill: g.Kill}, g)
			assert.Equal(t, int64(1), g.DryRun+g.Cooldown+g.Kill, "under its action only")
			assert.Empty(t, r.Stats().Watches, "a rule without Watch watches nothing")
		})
	}
}

func TestRunaways_RowsAloneCatch(t *testing.T) {
	r, _ := newRunaways(t, 0)
	rd := r.NewRead("g", WatchKey{StartKey: "a"})
	got, newly := r.Observe(&rd, &RunawayRule{RowsScanned: 10, Action: RunawayKill}, 0, 11)
	assert.Equal(t, RunawayKill, got)
	assert.True(t, newly)
}

// A read that turns runaway under a rule with a Watch makes new reads of
// its group and identity runaway from their start, until the watch
// expires; other groups and identities are not touched.
func TestRunaways_Watch(t *testing.T) {
	r, clock := newRunaways(t, 0)
	rule := &RunawayRule{RowsScanned: 100, Action: RunawayCooldown, Watch: time.Minute}
	byTask := WatchKey{TaskID: 42, StartKey: "x"}
	byKey := WatchKey{StartKey: "orders/"}

	for _, k := range []WatchKey{byTask, byKey} {
		rd := r.NewRead("batch", k)
		_, newly := r.Observe(&rd, rule, 0, 101)
		require.True(t, newly)
	}
	clock.Advance(30 * time.Second)

	for _, k := range []WatchKey{{TaskID: 42, StartKey: "other"}, byKey} {
		rd := r.NewRead("batch", k)
		assert.True(t, rd.Watched(), "%+v", k)
		assert.Equal(t, RunawayCooldown, rd.Action(), "runaway from its first step")
		got, newly := r.Observe(&rd, nil, 0, 0)
		assert.Equal(t, RunawayCooldown, got, "for its whole life, rule or not")
		assert.False(t, newly, "counted at its start already")
	}
	for _, tc := range []struct {
		group string
		key   WatchKey
	}{
		{"oltp", byTask}, {"oltp", byKey}, {"batch", WatchKey{TaskID: 43}}, {"batch", WatchKey{StartKey: "orders/1"}},
	} {
		rd := r.NewRead(tc.group, tc.key)
		assert.False(t, rd.Watched(), "%s %+v", tc.group, tc.key)
		assert.Empty(t, rd.Action())
	}

	st := r.Stats()
	require.Len(t, st.Watches, 2)
	assert.Equal(t, RunawayWatch{Group: "batch", StartKey: []byte("orders/"), Action: RunawayCooldown, Expires: t0.Add(time.Minute)}, st.Watches[0])
	assert.Equal(t, RunawayWatch{Group: "batch", TaskID: 42, Action: RunawayCooldown, Expires: t0.Add(time.Minute)}, st.Watches[1])
	assert.Equal(t, RunawayGroupStats{Group: "batch", Cooldown: 4, Watched: 2}, groupCounts(st, "batch"))

	clock.Advance(30 * time.Second) // the watches expire
	rd := r.NewRead("batch", byTask)
	assert.False(t, rd.Watched(), "expired")
	assert.Empty(t, r.Stats().Watches)
	assert.Zero(t, r.watching.Load(), "NewRead is lock-free again")
}

// A read with no identity (WatchKey.None) is caught by no watch, even one
// of the open start key "", and when its rule catches it adds no watch;
// the rule still judges it and counts it.
func TestRunaways_NoIdentity(t *testing.T) {
	r, _ := newRunaways(t, 0)
	rule := &RunawayRule{RowsScanned: 100, Action: RunawayKill, Watch: time.Minute}
	for _, k := range []WatchKey{{}, {StartKey: "orders/"}} {
		rd := r.NewRead("batch", k)
		_, newly := r.Observe(&rd, rule, 0, 101)
		require.True(t, newly)
	}
	require.Len(t, r.Stats().Watches, 2)

	for _, k := range []WatchKey{{None: true}, {None: true, StartKey: "orders/"}} {
		rd := r.NewRead("batch", k)
		assert.False(t, rd.Watched(), "%+v", k)
		a, newly := r.Observe(&rd, rule, 0, 101)
		assert.Equal(t, RunawayKill, a, "the rule judges it")
		assert.True(t, newly)
	}
	assert.Len(t, r.Stats().Watches, 2, "it added no watch")
	assert.Equal(t, RunawayGroupStats{Group: "batch", Kill: 4}, groupCounts(r.Stats(), "batch"))
}

// A watched read that its rule then catches with a severer action comes
// under that action, is counted under it, and renews the watch with it.
func TestRunaways_WatchedReadCaughtSeverer(t *testing.T) {
	r, clock := newRunaways(t, 0)
	k := WatchKey{TaskID: 1}
	rd := r.NewRead("g", k)
	r.Observe(&rd, &RunawayRule{RowsScanned: 1, Action: RunawayDryRun, Watch: time.Minute}, 0, 2)
	clock.Advance(time.Second)

	rd = r.NewRead("g", k)
	require.Equal(t, RunawayDryRun, rd.Action())
	kill := &RunawayRule{RowsScanned: 10, Action: RunawayKill, Watch: time.Hour}
	got, newly := r.Observe(&rd, kill, 0, 5)
	assert.Equal(t, RunawayDryRun, got, "within the rule: the watch's action")
	assert.False(t, newly)
	got, newly = r.Observe(&rd, kill, 0, 11)
	assert.Equal(t, RunawayKill, got)
	assert.True(t, newly)
	st := r.Stats()
	assert.Equal(t, RunawayGroupStats{Group: "g", DryRun: 2, Kill: 1, Watched: 1}, groupCounts(st, "g"))
	require.Len(t, st.Watches, 1)
	assert.Equal(t, RunawayKill, st.Watches[0].Action)
	assert.Equal(t, t0.Add(time.Second+time.Hour), st.Watches[0].Expires)

	// A milder rule does not lighten a watched read.
	rd = r.NewRead("g", k)
	got, _ = r.Observe(&rd, &RunawayRule{RowsScanned: 1, Action: RunawayDryRun}, 0, 100)
	assert.Equal(t, RunawayKill, got)
}

// A Put that adds, changes or removes a group's rule applies to a running
// read from its next step: the read path reads Group.Runaway at each step
// and hands it to Observe.
func TestRunaways_RuleChangedWhileReading(t *testing.T) {
	m := NewManager()
	require.NoError(t, m.Put(GroupConfig{Name: "g"}))
	g := m.Resolve("g") // resolved once, at the read's start
	r, _ := newRunaways(t, 0)
	rd := r.NewRead(g.Name(), WatchKey{TaskID: 1})
	step := func(exec time.Duration, rows int64) (RunawayAction, bool) {
		return r.Observe(&rd, g.Runaway(), exec, rows)
	}
	put := func(rule *RunawayRule) {
		t.Helper()
		require.NoError(t, m.Put(GroupConfig{Name: "g", Runaway: rule}))
	}

	a, _ := step(time.Second, 500)
	assert.Empty(t, a, "no rule")

	put(&RunawayRule{RowsScanned: 1000, Action: RunawayCooldown})
	a, _ = step(time.Second, 600)
	assert.Empty(t, a, "added, not yet past it")

	put(&RunawayRule{RowsScanned: 500, Action: RunawayCooldown})
	a, newly := step(time.Second, 700)
	assert.Equal(t, RunawayCooldown, a, "tightened: past it at the next step")
	assert.True(t, newly)

	put(&RunawayRule{RowsScanned: 10000, Action: RunawayCooldown})
	a, _ = step(time.Second, 800)
	assert.Empty(t, a, "relaxed: the read is within it again")

	put(&RunawayRule{RowsScanned: 500, Action: RunawayKill})
	a, newly = step(time.Second, 900)
	assert.Equal(t, RunawayKill, a, "changed action")
	assert.True(t, newly, "counted under the new action too")

	put(nil)
	a, newly = step(time.Second, 1000)
	assert.Empty(t, a, "removed")
	assert.False(t, newly)

	put(&RunawayRule{RowsScanned: 500, Action: RunawayCooldown})
	a, newly = step(time.Second, 1100)
	assert.Equal(t, RunawayCooldown, a)
	assert.False(t, newly, "a read is counted once per action")
	assert.Equal(t, RunawayGroupStats{Group: "g", Cooldown: 1, Kill: 1}, groupCounts(r.Stats(), "g"))
}

func TestRunaways_WatchBound(t *testing.T) {
	r, clock := newRunaways(t, 2)
	rule := &RunawayRule{RowsScanned: 1, Action: RunawayKill, Watch: time.Minute}
	for id := range uint64(5) {
		rd := r.NewRead("g", WatchKey{TaskID: id + 1})
		r.Observe(&rd, rule, 0, 2)
		clock.Advance(time.Second)
	}
	st := r.Stats()
	require.Len(t, st.Watches, 2)
	assert.Equal(t, uint64(4), st.Watches[0].TaskID, "the two that expire last are kept")
	assert.Equal(t, uint64(5), st.Watches[1].TaskID)
	assert.Equal(t, int64(3), st.WatchesEvicted)
}

func TestRunaways_CountsBounded(t *testing.T) {
	r, _ := newRunaways(t, 0)
	rule := &RunawayRule{RowsScanned: 1, Action: RunawayDryRun}
	for i := range MaxRunawayGroups + 5 {
		rd := r.NewRead(fmt.Sprint("g", i), WatchKey{})
		r.Observe(&rd, rule, 0, 2)
	}
	st := r.Stats()
	assert.Len(t, st.Groups, MaxRunawayGroups)
	assert.Equal(t, int64(5), st.OtherGroups)
}

func TestRunaways_StatsJSON(t *testing.T) {
	r, _ := newRunaways(t, 0)
	st := r.Stats()
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.JSONEq(t, `{"groups":[],"other_groups":0,"watches":[],"watches_evicted":0}`, string(b), "empty lists, not null")

	rd := r.NewRead("g", WatchKey{StartKey: "k"})
	r.Observe(&rd, &RunawayRule{RowsScanned: 1, Action: RunawayKill, Watch: time.Minute}, 0, 2)
	b, err = json.Marshal(r.Stats())
	require.NoError(t, err)
	assert.JSONEq(t, `{"groups":[{"group":"g","dryrun":0,"cooldown":0,"kill":1,"watched":0}],"other_groups":0,
		"watches":[{"group":"g","start_key":"aw==","action":"kill","expires":"2025-01-01T00:01:00Z"}],"watches_evicted":0}`, string(b))
	var back RunawayStats
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r.Stats(), back)
}

// Many reads at once, some of them runaway: every runaway read is counted
// exactly once, and the race detector sees the hot path's shared state.
func TestRunaways_Concurrent(t *testing.T) {
	r := NewRunaways(nil, 64)
	rule := &RunawayRule{RowsScanned: 50, Action: RunawayCooldown, Watch: time.Minute}
	const readers, reads = 8, 200
	var wg sync.WaitGroup
	for w := range readers {
		wg.Go(func() {
			for i := range reads {
				rd := r.NewRead("g", WatchKey{TaskID: uint64(w*reads + i + 1)})
				for rows := int64(0); rows <= int64(i%100); rows += 10 {
					r.Observe(&rd, rule, 0, rows)
				}
				_ = r.Stats()
			}
		})
	}
	wg.Wait()
	// Read i reads up to i%100 rows in tens: past 50 when i%100 >= 60.
	want := int64(readers * reads * 40 / 100)
	assert.Equal(t, want, groupCounts(r.Stats(), "g").Cooldown)
	assert.Len(t, r.Stats().Watches, 64)
}

// The read path's cost with no rule, and within one, is one comparison or
// two: no lock, no allocation.
func TestRunaways_HotPathAllocatesNothing(t *testing.T) {
	r, _ := newRunaways(t, 0)
	rule := &RunawayRule{ExecElapsed: time.Second, RowsScanned: 1 << 20, Action: RunawayKill, Watch: time.Minute}
	key := WatchKey{StartKey: "k"}
	rd := r.NewRead("g", key)
	allocs := testing.AllocsPerRun(100, func() {
		rd = r.NewRead("g", key)
		r.Observe(&rd, nil, time.Millisecond, 10)
		r.Observe(&rd, rule, time.Millisecond, 10)
	})
	assert.Zero(t, allocs)
	assert.True(t, r.mu.TryLock(), "the hot path takes no lock")
	r.mu.Unlock()
}

func BenchmarkRunaways_Observe(b *testing.B) {
	ms := time.Millisecond
	for _, bc := range []struct {
		name string
		rule *RunawayRule
		rows int64
	}{
		{"no-rule", nil, 10},
		{"under-limits", &RunawayRule{ExecElapsed: time.Second, RowsScanned: 1 << 20, Action: RunawayKill, Watch: time.Minute}, 10},
		{"runaway-already", &RunawayRule{RowsScanned: 1, Action: RunawayCooldown, Watch: time.Minute}, 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := NewRunaways(nil, 0)
			rd := r.NewRead("g", WatchKey{TaskID: 1})
			r.Observe(&rd, bc.rule, ms, bc.rows)
			b.ReportAllocs()
			for b.Loop() {
				r.Observe(&rd, bc.rule, ms, bc.rows)
			}
		})
	}
}

func BenchmarkRunaways_NewRead(b *testing.B) {
	for _, watches := range []int{0, 1000} {
		b.Run(fmt.Sprint("watches=", watches), func(b *testing.B) {
			r := NewRunaways(nil, 0)
			rule := &RunawayRule{RowsScanned: 1, Action: RunawayKill, Watch: time.Hour}
			for i := range watches {
				rd := r.NewRead("g", WatchKey{TaskID: uint64(i + 1)})
				r.Observe(&rd, rule, 0, 2)
			}
			key := WatchKey{TaskID: 1 << 40}
			b.ReportAllocs()
			for b.Loop() {
				_ = r.NewRead("g", key)
			}
		})
	}
}

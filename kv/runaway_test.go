package kv

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// scanAll reads [start, +inf) to its end and returns the rows read and the
// scan's error.
func scanAll(ctx context.Context, db *DB, start []byte) (int, error) {
	it := db.Scan(ctx, start, nil, nil)
	n := 0
	for it.Next() {
		n++
	}
	err := it.Err()
	_ = it.Close()
	return n, err
}

func runawayStats(t *testing.T, db *DB, group string) resource.RunawayGroupStats {
	t.Helper()
	rs := db.Stats().Runaway
	require.NotNil(t, rs)
	for _, g := range rs.Groups {
		if g.Group == group {
			return g
		}
	}
	return resource.RunawayGroupStats{Group: group}
}

// A read past the rule's rows is ended at its next step with ErrRunaway;
// its start key is watched, so the same read coming again is refused
// before its first step, while other reads go on.
func TestRunaway_KillAndWatch(t *testing.T) {
	const n = 20000
	db := openTest(t, "", &Options{InMemory: true, Workers: 1, TimeSlice: 100 * time.Microsecond,
		Runaway: &resource.RunawayRule{RowsScanned: 2000, Action: resource.RunawayKill, Watch: time.Hour}})
	load(t, db, n, func(int) []byte { return []byte("v") })
	ctx := context.Background()

	rows, err := scanAll(ctx, db, nil)
	require.ErrorIs(t, err, ErrRunaway)
	assert.Less(t, rows, n, "the scan ended before its end")
	assert.GreaterOrEqual(t, rows, 2000-1024, "what it had read before it crossed the limit stands")
	assert.EqualValues(t, 1, runawayStats(t, db, resource.DefaultGroup).Kill)

	rows, err = scanAll(ctx, db, nil)
	require.ErrorIs(t, err, ErrRunaway, "the watch catches the same start key")
	assert.Zero(t, rows, "before its first step")
	g := runawayStats(t, db, resource.DefaultGroup)
	assert.EqualValues(t, 2, g.Kill)
	assert.EqualValues(t, 1, g.Watched)
	require.Len(t, db.Stats().Runaway.Watches, 1)
	assert.Empty(t, db.Stats().Runaway.Watches[0].StartKey, "the open start key")

	rows, err = scanAll(ctx, db, keyN(10))
	require.ErrorIs(t, err, ErrRunaway, "another start key runs, and is caught by the rule itself")
	assert.Positive(t, rows)

	_, err = db.Get(ctx, keyN(5))
	assert.NoError(t, err, "a Get is not runaway")
	_, err = db.Get(ctx, keyN(10))
	assert.NoError(t, err, "nor is a Get of the key a watched scan started at: a key is not a start key")
	_, err = db.MultiGet(ctx, [][]byte{keyN(10), keyN(11)})
	assert.NoError(t, err, "nor a MultiGet from the other watched start key")
	rows, err = scanAll(WithTaskID(ctx, 7), db, keyN(n-100))
	assert.NoError(t, err, "a short scan is not")
	assert.Equal(t, 100, rows)
}

// A point read has no start key: a MultiGet from the key a watched scan
// started at, whose step yields (so that the rule first applies to it
// after a step), is not that scan coming again. Before, it was killed: its
// first key was taken for a start key then (a CI flake of the test above,
// whose two-key MultiGet yielded on a slow machine).
func TestRunaway_YieldingMultiGetIsNotAWatchedScan(t *testing.T) {
	const n = 6000
	db := openTest(t, "", &Options{InMemory: true, Workers: 1, TimeSlice: 50 * time.Microsecond,
		Runaway: &resource.RunawayRule{RowsScanned: 2000, Action: resource.RunawayKill, Watch: time.Hour}})
	load(t, db, n, func(int) []byte { return []byte("v") })
	ctx := context.Background()
	_, err := scanAll(ctx, db, keyN(10))
	require.ErrorIs(t, err, ErrRunaway)
	require.Len(t, db.Stats().Runaway.Watches, 1)

	keys := make([][]byte, 1500) // under the rule's rows, over a step's time
	for i := range keys {
		keys[i] = keyN(10 + i)
	}
	yields := db.Stats().Pool.Yields
	vals, err := db.MultiGet(ctx, keys)
	require.NoError(t, err)
	assert.Len(t, vals, len(keys))
	require.Greater(t, db.Stats().Pool.Yields, yields, "the MultiGet yielded: the rule applied to it after a step")
	assert.Len(t, db.Stats().Runaway.Watches, 1, "and it added no watch")
}

// A task id is the watch's identity when the read has one: another start
// key with the same id is caught.
func TestRunaway_WatchByTaskID(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, TimeSlice: 100 * time.Microsecond,
		Runaway: &resource.RunawayRule{RowsScanned: 1500, Action: resource.RunawayKill, Watch: time.Hour}})
	load(t, db, 10000, func(int) []byte { return []byte("v") })
	ctx := WithTaskID(context.Background(), 42)
	_, err := scanAll(ctx, db, nil)
	require.ErrorIs(t, err, ErrRunaway)
	_, err = db.Get(ctx, keyN(3))
	assert.ErrorIs(t, err, ErrRunaway, "the id is watched: even its Get")
	_, err = db.Get(context.Background(), keyN(3))
	assert.NoError(t, err, "without the id")
}

// Cooldown lets the read finish, at the lowest level; dryrun only counts.
func TestRunaway_CooldownAndDryRun(t *testing.T) {
	const n = 5000
	for _, a := range []resource.RunawayAction{resource.RunawayCooldown, resource.RunawayDryRun} {
		t.Run(string(a), func(t *testing.T) {
			db := openTest(t, "", &Options{InMemory: true, TimeSlice: 100 * time.Microsecond,
				Runaway: &resource.RunawayRule{RowsScanned: 1000, Action: a}})
			load(t, db, n, func(int) []byte { return []byte("v") })
			level2 := db.Stats().Pool.Queue.Levels[2].Steps
			began := time.Now()
			rows, err := scanAll(context.Background(), db, nil)
			took := time.Since(began)
			require.NoError(t, err)
			assert.Equal(t, n, rows, "the read runs to its end")
			g := runawayStats(t, db, resource.DefaultGroup)
			assert.EqualValues(t, 1, g.Count(a))
			steps := db.Stats().Pool.Queue.Levels[2].Steps - level2
			if a == resource.RunawayCooldown {
				assert.Positive(t, steps, "its steps after the crossing ran on the last level")
			} else if last := readpool.DefaultLevelThresholds()[1]; took < last {
				// Its steps took less than the whole read: too little to
				// sink to the last level by itself.
				assert.Zero(t, steps, "a read of %s sank to the last level", took)
			} else {
				t.Logf("the read took %s, past the last level's threshold (%s): a slow machine (-race) may sink it by itself", took, last)
			}
		})
	}
}

// Coprocessor rows count before filtering: a request that returns nothing
// but scans past the limit is runaway.
func TestRunaway_CoprocessorRowsBeforeFilter(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, TimeSlice: 100 * time.Microsecond,
		Runaway: &resource.RunawayRule{RowsScanned: 1000, Action: resource.RunawayKill}})
	row, err := coproc.EncodeRow(map[string]any{"v": int64(1)})
	require.NoError(t, err)
	load(t, db, 10000, func(int) []byte { return row })
	_, err = db.Coprocessor(context.Background(), &coproc.Request{
		Ranges: []coproc.KeyRange{{}},
		Filter: &coproc.Expr{Op: "eq", Args: []*coproc.Expr{{Op: "col", Col: "v"}, {Op: "const", Value: int64(2)}}},
	})
	assert.ErrorIs(t, err, ErrRunaway)
}

// Under resource control the rule is the group's, and a Put that adds one
// applies to a running read from its next step.
func TestRunaway_GroupRuleChangedWhileReading(t *testing.T) {
	const n = 50000
	db := openTest(t, "", &Options{InMemory: true, ResourceControl: true, TimeSlice: 100 * time.Microsecond})
	load(t, db, n, func(int) []byte { return []byte("v") })
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "batch", RUPerSec: 1000, Burstable: true}))
	ctx := WithResourceGroup(context.Background(), "batch")

	it := db.Scan(ctx, nil, nil, nil)
	defer func() { _ = it.Close() }()
	require.True(t, it.Next(), "the scan runs with no rule")
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "batch", RUPerSec: 1000, Burstable: true,
		Runaway: &resource.RunawayRule{RowsScanned: 1, Action: resource.RunawayKill}}))
	rows := 1
	for it.Next() {
		rows++
	}
	require.ErrorIs(t, it.Err(), ErrRunaway, "killed at a step after the Put")
	assert.Less(t, rows, n)
	assert.EqualValues(t, 1, runawayStats(t, db, "batch").Kill)
	assert.Zero(t, runawayStats(t, db, resource.DefaultGroup).Kill, "counted under its group")

	// Removing the rule lets the next read through.
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "batch", RUPerSec: 1000, Burstable: true}))
	got, err := scanAll(ctx, db, nil)
	require.NoError(t, err)
	assert.Equal(t, n, got)
}

func TestRunaway_InvalidRuleRefusedAtOpen(t *testing.T) {
	_, err := Open("", &Options{InMemory: true, Runaway: &resource.RunawayRule{ExecElapsed: -time.Second, Action: resource.RunawayKill}})
	require.ErrorIs(t, err, resource.ErrInvalidRunaway)
	assert.Contains(t, err.Error(), "Runaway")
}

// SetRunaway changes the rule of running reads from their next step, and
// refuses an invalid rule without changing anything.
func TestRunaway_SetRunaway(t *testing.T) {
	const n = 50000
	db := openTest(t, "", &Options{InMemory: true, TimeSlice: 100 * time.Microsecond})
	load(t, db, n, func(int) []byte { return []byte("v") })
	require.ErrorIs(t, db.SetRunaway(&resource.RunawayRule{Action: resource.RunawayKill}), resource.ErrInvalidRunaway, "no limit")

	it := db.Scan(context.Background(), nil, nil, nil)
	defer func() { _ = it.Close() }()
	require.True(t, it.Next())
	require.NoError(t, db.SetRunaway(&resource.RunawayRule{RowsScanned: 1, Action: resource.RunawayKill}))
	rows := 1
	for it.Next() {
		rows++
	}
	require.ErrorIs(t, it.Err(), ErrRunaway)
	assert.Less(t, rows, n)

	require.NoError(t, db.SetRunaway(nil))
	got, err := scanAll(context.Background(), db, nil)
	require.NoError(t, err)
	assert.Equal(t, n, got, "no rule now")

	direct := openTest(t, "", &Options{InMemory: true, Scheduler: SchedulerDirect})
	assert.Error(t, direct.SetRunaway(&resource.RunawayRule{RowsScanned: 1, Action: resource.RunawayKill}))
}

// Reads in cooldown take turns at the cooled slots (a quarter of the
// workers, at least one) and all run to their end, on both queues that
// demote: none is lost or left waiting for a slot that never frees.
func TestRunaway_CooledDownReadsTakeTurns(t *testing.T) {
	const n, readers = 5000, 6
	rule := &resource.RunawayRule{RowsScanned: 300, Action: resource.RunawayCooldown}
	for _, sched := range []Scheduler{SchedulerMLFQ, SchedulerPriority} {
		t.Run(string(sched), func(t *testing.T) {
			o := &Options{InMemory: true, Workers: 4, TimeSlice: 50 * time.Microsecond, Scheduler: sched}
			if sched == SchedulerPriority {
				o.ResourceControl = true
			} else {
				o.Runaway = rule
			}
			db := openTest(t, "", o)
			if sched == SchedulerPriority {
				g, _ := db.ResourceGroups().Get(resource.DefaultGroup)
				g.Runaway = rule
				require.NoError(t, db.ResourceGroups().Put(g))
			}
			load(t, db, n, func(int) []byte { return []byte("v") })
			var wg sync.WaitGroup
			rows := make([]int, readers)
			errs := make([]error, readers)
			for i := range readers {
				wg.Go(func() { rows[i], errs[i] = scanAll(context.Background(), db, keyN(i)) })
			}
			wg.Wait()
			for i := range readers {
				require.NoError(t, errs[i])
				assert.Equal(t, n-i, rows[i], "reader %d ran to its end", i)
			}
			assert.EqualValues(t, readers, runawayStats(t, db, resource.DefaultGroup).Cooldown)
			assert.Zero(t, db.Stats().Pool.Queue.Held, "no read left waiting for a slot")
		})
	}
}

func TestRunaway_CooledSlots(t *testing.T) {
	for workers, want := range map[int]int{1: 1, 2: 1, 4: 1, 7: 1, 8: 2, 16: 4} {
		assert.Equal(t, want, cooledSlots(workers), "%d workers", workers)
	}
	var o Options
	o.ensureDefaults()
	assert.Equal(t, max(1, runtime.GOMAXPROCS(0)/4), cooledSlots(o.Workers), "the default: GOMAXPROCS workers")
}

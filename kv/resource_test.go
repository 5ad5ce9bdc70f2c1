package kv

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/resource"
)

func groupStats(t *testing.T, db *DB, name string) resource.GroupStats {
	t.Helper()
	for _, g := range db.Stats().Groups {
		if g.Name == name {
			return g
		}
	}
	t.Fatalf("no group %q in the stats", name)
	return resource.GroupStats{}
}

func TestResourceControl_ReadsAreChargedToTheirGroup(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, ResourceControl: true, RowCacheSize: -1})
	assert.Equal(t, SchedulerPriority, db.Options().Scheduler)
	assert.Equal(t, "priority", db.Stats().Pool.Queue.Kind)
	load(t, db, 5000, func(int) []byte { return make([]byte, 100) })
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "tenant", RUPerSec: 100, Burstable: true}))

	ctx := WithResourceGroup(context.Background(), "tenant")
	for i := range 80 {
		_, err := db.Get(ctx, keyN(i))
		require.NoError(t, err)
	}
	it := db.Scan(ctx, nil, nil, nil)
	rows := 0
	for it.Next() {
		rows++
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Equal(t, 5000, rows)

	tenant := groupStats(t, db, "tenant")
	// 81 requests are 10.125 RU, and the scan read ~0.5 MB more (~8 RU).
	assert.Greater(t, tenant.RU, 81.0/8+5, "requests and bytes both charged")
	assert.Zero(t, groupStats(t, db, resource.DefaultGroup).RU, "nothing ran as default yet")

	_, err := db.Get(WithResourceGroup(context.Background(), "no-such-group"), keyN(1))
	require.NoError(t, err)
	assert.Greater(t, groupStats(t, db, resource.DefaultGroup).RU, 0.0, "an unknown group runs as default")

	b, err := json.Marshal(db.Stats())
	require.NoError(t, err)
	assert.Contains(t, string(b), `"groups":[`)
}

func TestResourceControl_PrioritySchedulerImpliesIt(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, Scheduler: SchedulerPriority})
	assert.True(t, db.Options().ResourceControl)
	assert.NotEmpty(t, db.Stats().Groups)

	plain := openTest(t, "", &Options{InMemory: true})
	assert.Empty(t, plain.Stats().Groups, "no group figures without resource control")
	require.NoError(t, plain.ResourceGroups().Put(resource.GroupConfig{Name: "x", RUPerSec: 1}), "groups can be kept all the same")
}

// A low-priority group flooding a tiny pool makes itself busy, not its
// neighbours: a high-priority group's Gets and another medium group's are
// admitted. Counts, not times.
func TestResourceControl_FloodMakesOnlyTheFlooderBusy(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		release, blocked := make(chan struct{}), make(chan struct{})
		var once sync.Once
		db := openTest(t, "", &Options{InMemory: true, ResourceControl: true, Workers: 1, MaxTasks: 8, RowCacheSize: -1})
		load(t, db, 10, func(int) []byte { return []byte("v") })
		db.hooks.beforeRead = func(key []byte) {
			if string(key) == string(keyN(0)) {
				once.Do(func() { close(blocked); <-release })
			}
		}
		for _, g := range []resource.GroupConfig{
			{Name: "batch", Burstable: true, Priority: resource.PriorityLow},
			{Name: "oltp", Burstable: true, Priority: resource.PriorityHigh},
			{Name: "web", Burstable: true},
		} {
			require.NoError(t, db.ResourceGroups().Put(g))
		}
		// Hold the one worker.
		blockerDone := make(chan error, 1)
		go func() {
			_, err := db.Get(WithResourceGroup(context.Background(), "batch"), keyN(0))
			blockerDone <- err
		}()
		<-blocked

		var wg sync.WaitGroup
		var busy, admitted atomic.Int64
		errs := make(chan error, 16)
		for range 200 {
			wg.Go(func() {
				_, err := db.Get(WithResourceGroup(context.Background(), "batch"), keyN(1))
				switch {
				case errors.Is(err, ErrBusy):
					busy.Add(1)
				case err == nil:
					admitted.Add(1)
				default:
					errs <- err
				}
			})
		}
		// The flood has filled the low class's room (8) once all 200 have
		// tried: each was refused or waits, queued.
		synctest.Wait()
		require.EqualValues(t, 200, busy.Load()+int64(db.Stats().Pool.Queued))
		others := make(chan error, 14)
		for i := range 14 { // 7 a class: within each class's room of 8
			group := []string{"oltp", "web"}[i%2]
			wg.Go(func() {
				_, err := db.Get(WithResourceGroup(context.Background(), group), keyN(2))
				others <- err
			})
		}
		synctest.Wait() // each was admitted and waits, or returned
		close(release)
		require.NoError(t, <-blockerDone)
		wg.Wait()
		close(errs)
		close(others)
		for err := range errs {
			t.Errorf("flood: %v", err)
		}
		for err := range others {
			assert.NoError(t, err, "the neighbours are admitted")
		}
		assert.Positive(t, busy.Load(), "the flooder made itself busy")
		assert.Equal(t, int64(200), busy.Load()+admitted.Load())
		assert.EqualValues(t, busy.Load(), groupStats(t, db, "batch").RejectedBusy)
		assert.Zero(t, groupStats(t, db, "oltp").RejectedBusy)
		assert.Zero(t, groupStats(t, db, "web").RejectedBusy)
	})
}

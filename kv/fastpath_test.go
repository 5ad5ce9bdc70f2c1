package kv

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// cacheKey stores key, reads it once so the row cache holds it, and waits
// until ristretto has applied the insert. It reads as a Get's step does,
// without the pool, which may be saturated.
func cacheKey(t *testing.T, db *DB, key, val string) {
	t.Helper()
	require.NoError(t, db.Set([]byte(key), []byte(val)))
	_, _, err := db.read([]byte(key))
	require.NoError(t, err)
	db.cache.c.Wait()
	_, _, ok, _ := db.cache.lookup([]byte(key))
	require.True(t, ok, "the first Get cached %q", key)
}

func TestGet_CacheHitNeedsNoWorker(t *testing.T) {
	db, release := openSaturated(t, Options{})
	defer release()
	cacheKey(t, db, "hot", "v")
	before := db.Stats()

	// The only worker is held: a Get that needed it would block. A hit
	// does not.
	for range 10 {
		v, err := db.Get(context.Background(), []byte("hot"))
		require.NoError(t, err)
		assert.Equal(t, "v", string(v))
	}
	after := db.Stats()
	assert.EqualValues(t, 10, after.Pool.Bypassed-before.Pool.Bypassed)
	assert.EqualValues(t, 10, after.Pool.Spawned-before.Pool.Spawned, "hits count as spawned")
	assert.EqualValues(t, 10, after.Pool.Completed-before.Pool.Completed, "and as completed")
	assert.Equal(t, before.Pool.Steps, after.Pool.Steps, "no step ran for them")
	assert.EqualValues(t, 10, after.RowCache.Hits-before.RowCache.Hits)
	assert.Equal(t, before.RowCache.Misses, after.RowCache.Misses)

	// A miss still needs the worker: it waits, and ends at its deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := db.Get(ctx, []byte("cold"))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.EqualValues(t, 1, db.Stats().RowCache.Misses-after.RowCache.Misses, "the fast path's miss is counted once")
}

func TestGet_RowCacheHitsInPoolTurnsTheFastPathOff(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, RowCacheHitsInPool: true})
	cacheKey(t, db, "hot", "v")
	before := db.Stats()
	for range 5 {
		_, err := db.Get(context.Background(), []byte("hot"))
		require.NoError(t, err)
	}
	after := db.Stats()
	assert.Zero(t, after.Pool.Bypassed)
	assert.EqualValues(t, 5, after.Pool.Steps-before.Pool.Steps, "each hit ran as a step")
	assert.EqualValues(t, 5, after.RowCache.Hits-before.RowCache.Hits)
}

func TestGet_CacheHitChargedToItsGroup(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, ResourceControl: true})
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "app", RUPerSec: 1000, Burstable: true}))
	cacheKey(t, db, "hot", "value")
	ctx := WithResourceGroup(context.Background(), "app")
	ru := func() float64 {
		for _, g := range db.ResourceGroups().Stats() {
			if g.Name == "app" {
				return g.RU
			}
		}
		return -1
	}
	before, bypassed := ru(), db.Stats().Pool.Bypassed
	for range 20 {
		v, err := db.Get(ctx, []byte("hot"))
		require.NoError(t, err)
		assert.Equal(t, "value", string(v))
	}
	assert.EqualValues(t, 20, db.Stats().Pool.Bypassed-bypassed)
	// At least the per-request charge of each Get.
	assert.GreaterOrEqual(t, ru()-before, 20*resource.RU(0, 0, true)-1e-9)
}

func TestGet_ThrottledGroupsCacheHitTakesThePoolsPath(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, ResourceControl: true})
	cacheKey(t, db, "hot", "v")
	// A limited group whose bucket (one second's worth) one request empties;
	// it then refills at 0.001 RU/s: its next read is held for hours.
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "slow", RUPerSec: resource.MinRUPerSec}))
	ctx := WithResourceGroup(context.Background(), "slow")
	_, err := db.Get(ctx, []byte("hot"))
	require.NoError(t, err, "the bucket starts full")
	bypassed := db.Stats().Pool.Bypassed

	ctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	_, err = db.Get(ctx, []byte("hot"))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "held by its group's limit, though the value is cached")
	assert.Equal(t, bypassed, db.Stats().Pool.Bypassed)

	// Other groups' hits are not held.
	_, err = db.Get(context.Background(), []byte("hot"))
	require.NoError(t, err)
	assert.Equal(t, bypassed+1, db.Stats().Pool.Bypassed)
}

func TestGet_CallerHandoffWhenAWorkerCompletesAQueuedGet(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		db, release := openSaturated(t, Options{RowCacheSize: -1})
		require.NoError(t, db.Set([]byte("k"), []byte("v")))
		s := queueBehindTheHeldRead(t, db, release, func() {
			v, err := db.Get(context.Background(), []byte("k"))
			assert.NoError(t, err)
			assert.Equal(t, "v", string(v))
		})
		// The queued Get ran on the worker, its caller blocked; the held one
		// too, unless it ran inline, on its caller's goroutine (when the
		// worker was parked at the time), where there is nobody to hand to.
		// Either way one hand-off: with only Gets live, the worker that
		// readied the held Get's caller steps the queued Get first and hands
		// its P to both callers at once. (On the real clock a step that
		// outlasts the worker's regular hand-back to Go's scheduler, 100 µs,
		// lets that Gosched pay the debt uncounted; on synctest's no step
		// takes any time.)
		require.LessOrEqual(t, s.Inline, int64(1))
		assert.Equal(t, int64(2), s.Completed, "both Gets served")
		assert.Equal(t, int64(1), s.CallerHandoffs, "one hand-off serves both callers: %+v", s)
	})
}

// queueBehindTheHeldRead runs read on its own goroutine in a store from
// openSaturated, opened in a synctest bubble, waits until it is queued
// behind the held read (its caller then blocks on it), releases the held
// one, and returns the pool's figures once read has returned and the
// worker has parked.
func queueBehindTheHeldRead(t *testing.T, db *DB, release func(), read func()) readpool.Stats {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(read)
	synctest.Wait()
	require.Equal(t, 1, db.Stats().Pool.Queued, "the read is queued behind the held one")
	release()
	wg.Wait()
	synctest.Wait()
	require.Equal(t, 1, db.Stats().Pool.Parked, "the worker parked")
	return *db.Stats().Pool
}

func TestStripesFor(t *testing.T) {
	assert.Equal(t, minStripes, stripesFor(1))
	assert.Equal(t, minStripes, stripesFor(64<<10))
	assert.Equal(t, 1<<17, stripesFor(32<<20), "one per 256 bytes")
	assert.Equal(t, maxStripes, stripesFor(1<<40))
}

func TestRowCache_AWriteSparesOtherKeys(t *testing.T) {
	// With 4,096 fixed stripes, 1,000 writes to other keys dropped ~250 of
	// 1,000 cached entries; with a stripe per 128 bytes of the cache, ~4.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	const n = 1000
	b := db.NewBatch()
	for i := range n {
		b.Set(keyN(i), []byte("v"))
	}
	require.NoError(t, db.Apply(b))
	ctx := context.Background()
	for i := range n {
		_, err := db.Get(ctx, keyN(i))
		require.NoError(t, err)
	}
	db.cache.c.Wait()
	for i := range n {
		require.NoError(t, db.Set(keyN(n+i), []byte("other")))
	}
	hits := 0
	for i := range n {
		if _, _, ok, _ := db.cache.lookup(keyN(i)); ok {
			hits++
		}
	}
	assert.GreaterOrEqual(t, hits, n-30, "entries dropped by writes to other keys")
}

// A row-cache hit allocates the caller's copy of the value and nothing
// else: no task, no entry, no context extras (issue 42's lean hit path).
func TestGet_CacheHitAllocatesOnlyTheCopy(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, o := range []Options{{}, {ResourceControl: true}} {
		o.InMemory, o.NoSync = true, true
		db := openTest(t, "", &o)
		cacheKey(t, db, "k", "value")
		ctx, k := context.Background(), []byte("k")
		before := db.Stats().RowCache.Hits
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := db.Get(ctx, k); err != nil {
				t.Fatal(err)
			}
		})
		require.Greater(t, db.Stats().RowCache.Hits-before, int64(200), "%s: served from the row cache", o.Scheduler)
		assert.Equal(t, 1.0, allocs, "%s: allocations per hit", o.Scheduler)
	}
}

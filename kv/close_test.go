package kv

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScan_RacesClose runs scans against a Close of their store: each scan
// either reads rows or reports ErrClosed, Close returns nil (Pebble reports
// an iterator left open there, and panics on one closed after it), and no
// goroutine is left (TestMain runs goleak).
func TestScan_RacesClose(t *testing.T) {
	const rounds, scanners, perScanner = 40, 8, 4
	for _, sched := range []Scheduler{SchedulerMLFQ, SchedulerFIFO, SchedulerDirect} {
		t.Run(string(sched), func(t *testing.T) {
			var rowsSeen, closedSeen int
			for round := range rounds {
				db, err := Open("", &Options{InMemory: true, Scheduler: sched, Workers: 2})
				require.NoError(t, err)
				load(t, db, 300, func(int) []byte { return []byte("v") })
				// Close comes as the target-th scan starts, a different one
				// each round, so that it meets scans at every stage: being
				// started, queued, reading, waiting for their reader.
				target := int64(1 + round%(scanners*perScanner))
				trigger := make(chan struct{})
				var started atomic.Int64
				var wg sync.WaitGroup
				var mu sync.Mutex
				for g := range scanners {
					wg.Go(func() {
						for i := range perScanner {
							if started.Add(1) == target {
								close(trigger)
							}
							o := &ScanOptions{Reverse: (g+i)%2 == 0}
							it := db.Scan(context.Background(), nil, nil, o)
							rows := 0
							for it.Next() {
								rows++
							}
							err := it.Err()
							assert.NoError(t, it.Close())
							mu.Lock()
							switch {
							case err != nil:
								closedSeen++
								assert.ErrorIs(t, err, ErrClosed)
							default:
								rowsSeen++
								assert.Equal(t, 300, rows, "a scan that ends without error read everything")
							}
							mu.Unlock()
						}
					})
				}
				<-trigger
				assert.NoError(t, db.Close())
				wg.Wait()
			}
			t.Logf("%d scans read rows, %d saw ErrClosed", rowsSeen, closedSeen)
		})
	}
}

// TestClose_WaitsForACacheHit: a Get served from the row cache runs on its
// caller's goroutine, in no worker's slot; Close, which closes the cache,
// must still wait for its lookup to end.
func TestClose_WaitsForACacheHit(t *testing.T) {
	db, err := Open("", &Options{InMemory: true, NoSync: true})
	require.NoError(t, err)
	cacheKey(t, db, "block", "v")
	b := newBlocker()
	db.hooks.beforeHit = b.hook
	got := make(chan error, 1)
	go func() {
		v, err := db.Get(context.Background(), []byte("block"))
		if err == nil && string(v) != "v" {
			err = assert.AnError
		}
		got <- err
	}()
	<-b.entered
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a cache hit was in its lookup", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(b.release)
	assert.NoError(t, <-got, "the hit that had started is served")
	assert.NoError(t, <-closed)
	_, err = db.Get(context.Background(), []byte("block"))
	assert.ErrorIs(t, err, ErrClosed)
}

// TestClose_ConcurrentClosesReturnWithTheStoreClosed: a Close that meets
// one still waiting for a read waits too, so that whichever returns, the
// store is closed and its directory can be opened again.
func TestClose_ConcurrentClosesReturnWithTheStoreClosed(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, &Options{NoSync: true, RowCacheSize: -1})
	require.NoError(t, err)
	b, read := holdAGet(t, db)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- db.Close() }()
	go func() { second <- db.Close() }()
	select {
	case err := <-first:
		t.Fatalf("a Close returned (%v) while a read ran", err)
	case err := <-second:
		t.Fatalf("a Close returned (%v) while a read ran", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(b.release)
	assert.NoError(t, <-read, "the running read finishes")
	assert.NoError(t, <-first)
	assert.NoError(t, <-second)
	again, err := Open(dir, nil)
	require.NoError(t, err, "both Closes returned: the directory is free")
	assert.NoError(t, again.Close())
}

// TestClose_NewCallsFailAtOnceWhileCloseWaits: while Close waits for a
// long call to let go of the store (here a Get held in Pebble; a Check
// holds it as long), new calls return ErrClosed at once rather than queue
// behind Close.
func TestClose_NewCallsFailAtOnceWhileCloseWaits(t *testing.T) {
	db, err := Open("", &Options{InMemory: true, NoSync: true, Scheduler: SchedulerDirect, RowCacheSize: -1})
	require.NoError(t, err)
	b, read := holdAGet(t, db)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	// Wait until Close waits for the held Get: its Lock of mu, queued
	// behind the Get's RLock, makes TryRLock fail from then on. Nothing
	// signals that moment, so the loop watches for the state itself
	// (Close sets closing before it takes mu).
	for db.mu.TryRLock() {
		db.mu.RUnlock()
		runtime.Gosched()
	}
	require.True(t, db.closing.Load())

	calls := make(chan error, 3)
	go func() {
		calls <- db.Set([]byte("k"), []byte("v"))
		_, err := db.Get(context.Background(), []byte("k"))
		calls <- err
		calls <- db.Flush()
	}()
	for range 3 {
		select {
		case err := <-calls:
			assert.ErrorIs(t, err, ErrClosed)
		case <-time.After(5 * time.Second):
			t.Fatal("a call waited behind Close")
		}
	}
	close(b.release)
	assert.NoError(t, <-read)
	assert.NoError(t, <-closed)
}

// holdAGet stores key "block" and starts a Get of it that the blocker holds
// in Pebble until b.release is closed; read gets the Get's error.
func holdAGet(t *testing.T, db *DB) (b *blocker, read <-chan error) {
	t.Helper()
	require.NoError(t, db.Set([]byte("block"), []byte("v")))
	b = newBlocker()
	db.hooks.beforeRead = b.hook
	done := make(chan error, 1)
	go func() {
		_, err := db.Get(context.Background(), []byte("block"))
		done <- err
	}()
	<-b.entered
	return b, done
}

// TestClose_AScanThatReadItsLastRowKeepsItsEnding: a scan that has read its
// last row, not yet told it is over, when the store closes ends complete —
// pooled and direct alike.
func TestClose_AScanThatReadItsLastRowKeepsItsEnding(t *testing.T) {
	for _, sched := range []Scheduler{SchedulerMLFQ, SchedulerDirect} {
		t.Run(string(sched), func(t *testing.T) {
			db, err := Open("", &Options{InMemory: true, Scheduler: sched})
			require.NoError(t, err)
			load(t, db, 10, func(int) []byte { return []byte("v") })
			it := db.Scan(context.Background(), nil, nil, &ScanOptions{Limit: 10})
			for range 10 {
				require.True(t, it.Next())
			}
			require.NoError(t, db.Close())
			assert.False(t, it.Next())
			assert.NoError(t, it.Err(), "it had read everything")
			assert.NoError(t, it.Close())
		})
	}
}

package kv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hangGuard is how long a deadline test waits for reads that should end at
// once before it gives up on them: a bound on a hang, not a latency
// assertion. A pool that only notices a queued task's deadline when a
// worker pops it would hold them until the held step is released.
const hangGuard = 10 * time.Second

// TestGet_DeadlineWhileQueued queues Gets with short deadlines behind a
// step that holds the only worker: each must end with its deadline while
// still queued — the pool ends it and calls its Done without a worker —
// and the pool must count it as dropped.
func TestGet_DeadlineWhileQueued(t *testing.T) {
	const gets = 300
	for _, sched := range []Scheduler{SchedulerFIFO, SchedulerMLFQ} {
		t.Run(string(sched), func(t *testing.T) {
			db, release := openSaturated(t, Options{Scheduler: sched})
			require.NoError(t, db.Set([]byte("k"), []byte("v")))
			dropped := db.Stats().Pool.Dropped
			errs := make(chan error, gets)
			for range gets {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
					defer cancel()
					_, err := db.Get(ctx, []byte("k"))
					errs <- err
				}()
			}
			got := collect(t, errs, gets, release)
			release() // held to the end, so that no worker could have taken them
			assert.Len(t, got, gets)
			for _, err := range got {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			}
			assert.GreaterOrEqual(t, db.Stats().Pool.Dropped-dropped, int64(gets), "every Get was dropped while queued")
		})
	}
}

// TestScan_DeadlineWhileQueued is TestGet_DeadlineWhileQueued for a scan:
// its Next, waiting for a first batch that no worker will read, returns
// false once the scan's deadline has ended its queued task.
func TestScan_DeadlineWhileQueued(t *testing.T) {
	for _, sched := range []Scheduler{SchedulerFIFO, SchedulerMLFQ} {
		t.Run(string(sched), func(t *testing.T) {
			db, release := openSaturated(t, Options{Scheduler: sched})
			load(t, db, 100, func(int) []byte { return []byte("v") })
			dropped := db.Stats().Pool.Dropped
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			it := db.Scan(ctx, nil, nil, nil)
			defer it.Close()
			errs := make(chan error, 1)
			go func() {
				more := it.Next()
				assert.False(t, more, "no row was read: the worker is held")
				errs <- it.Err()
			}()
			got := collect(t, errs, 1, release)
			release()
			require.Len(t, got, 1)
			assert.ErrorIs(t, got[0], context.DeadlineExceeded)
			assert.GreaterOrEqual(t, db.Stats().Pool.Dropped-dropped, int64(1), "the scan was dropped while queued")
		})
	}
}

// collect receives n results. Past hangGuard it fails the test, calls
// release to let the pool drain, and still collects them all, so that no
// goroutine outlives the test.
func collect(t *testing.T, results <-chan error, n int, release func()) []error {
	t.Helper()
	got := make([]error, 0, n)
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	for len(got) < n {
		select {
		case err := <-results:
			got = append(got, err)
		case <-guard.C:
			t.Errorf("%d of %d reads still waiting after %v: their deadline did not end them while queued", n-len(got), n, hangGuard)
			release()
			for len(got) < n {
				got = append(got, <-results)
			}
		}
	}
	return got
}

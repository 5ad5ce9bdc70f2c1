package scan

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// A consumer that spends less than a hand-off costs on a batch steps its
// scan itself while the pool has a worker idle; one that spends more lets
// a worker fill the next batch meanwhile. Either way it reads every row
// once, in order. The bubble's clock makes "quick" exact: no time passes
// while the consumer runs.
func TestStream_AQuickConsumerStepsItsOwnScan(t *testing.T) {
	const n = 20000
	db := openPebble(t, n, 8) // outside the bubble: Pebble's goroutines are not the test's
	for _, tc := range []struct {
		name  string
		pause time.Duration // the consumer's time on each batch
		here  bool
	}{
		{"quick consumer", 0, true},
		{"slow consumer", 2 * pullBelow, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, readpool.Options{Workers: 1})
				synctest.Wait() // the worker parked
				c, err := NewCursor(db, Spec{})
				require.NoError(t, err)
				r, err := Spawn(context.Background(), p, c, readpool.SpawnOptions{})
				require.NoError(t, err)
				batches := 0
				total := readAll(t, r, func(*Batch) {
					batches++
					time.Sleep(tc.pause)
					// Let the worker file the step it ran and park, so
					// that the consumer never finds the task mid-filing
					// (then it wakes it, and rightly so). No time passes.
					synctest.Wait()
				})
				require.Equal(t, n, total)
				require.NoError(t, r.Close())
				st := p.Stats()
				if tc.here {
					// Each step here fills both slots; only the first
					// step, which the worker runs, fills the first two.
					assert.GreaterOrEqual(t, st.SteppedHere, int64((batches-2)/2), "of %d batches", batches)
					assert.EqualValues(t, 1, st.Steps-st.SteppedHere, "the worker ran the first step only")
				} else {
					assert.Zero(t, st.SteppedHere, "a worker filled the next batch while the consumer read")
					assert.GreaterOrEqual(t, st.Wakes, int64(batches/2-2))
				}
			})
		})
	}
}

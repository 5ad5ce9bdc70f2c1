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

// stepFunc is a one-step task.
type stepFunc struct {
	step func(*readpool.StepContext)
	done chan error
}

func (f *stepFunc) Step(sc *readpool.StepContext) readpool.Status {
	f.step(sc)
	return readpool.Ready
}
func (f *stepFunc) Done(err error) { f.done <- err }

// TestUnitEnd_EndsABatchOnceTheSliceIsUsedOnASlowDisk: while reads block
// on a slow disk, a scan's batch ends early once its step has used the
// slice — a batch of 1,024 rows is hundreds of reads there; in memory it
// runs to its end.
func TestUnitEnd_EndsABatchOnceTheSliceIsUsedOnASlowDisk(t *testing.T) {
	for _, slow := range []bool{false, true} {
		t.Run(map[bool]string{false: "in memory", true: "slow disk"}[slow], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := readpool.New(readpool.Options{Workers: 1, TimeSlice: 10 * time.Millisecond})
				require.NoError(t, err)
				defer func() { require.NoError(t, p.Close()) }()
				var early, late bool
				task := &stepFunc{done: make(chan error, 1), step: func(sc *readpool.StepContext) {
					u := unitEnd{sc}
					if slow {
						p.EnterBlocking() // a read from the disk, in flight
						defer p.ExitBlocking()
					}
					early = u.Preempted()
					time.Sleep(10 * time.Millisecond) // rows read, in fake time
					late = u.Preempted()
				}}
				_, err = p.Spawn(context.Background(), task, readpool.SpawnOptions{})
				require.NoError(t, err)
				require.NoError(t, <-task.done)
				assert.False(t, early, "nothing urgent, slice left")
				assert.Equal(t, slow, late, "the slice is used: the batch ends only on a slow disk")
			})
		})
	}
}

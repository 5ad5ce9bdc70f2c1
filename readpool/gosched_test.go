package readpool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// busyStep is a step that works in units of unit (on synctest's clock) until
// ShouldYield says stop: a slice's worth of a scan's batches.
func busyStep(unit time.Duration) func(sc *StepContext) Status {
	return func(sc *StepContext) Status {
		for !sc.ShouldYield() {
			time.Sleep(unit)
		}
		return Ready
	}
}

// goschedsOf runs step as one task spawned with o and returns how many
// times the pool gave a P back to Go's scheduler meanwhile.
func goschedsOf(t *testing.T, o SpawnOptions, step func(sc *StepContext) Status) int64 {
	var n int64
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, TimeSlice: time.Millisecond})
		before := p.Stats().Goscheds
		task, done := doneTask(step)
		_, err := p.Spawn(context.Background(), task, o)
		require.NoError(t, err)
		require.NoError(t, <-done)
		n = p.Stats().Goscheds - before
	})
	return n
}

// A worker's step gives its P back every quarter slice (100 µs at most);
// a demoted task's every quarter of that: a cooled-down runaway read runs
// at the lowest priority at Go's scheduler too.
func TestGosched_DemotedStepsGiveThePBackMoreOften(t *testing.T) {
	unit := 5 * time.Microsecond // 128 units (the default Budget): a 640 µs step
	normal := goschedsOf(t, SpawnOptions{}, busyStep(unit))
	demoted := goschedsOf(t, SpawnOptions{Demoted: true}, busyStep(unit))
	// A 640 µs step: 6 hand-backs at 100 µs, 25 at 25 µs.
	assert.InDelta(t, 6, normal, 1, "a worker's step keeps its P for 100 µs at a time")
	assert.InDelta(t, 25, demoted, 2, "a demoted step keeps it for 25 µs at a time")
}

// A consumer that steps its task itself (StepHere) gives its P back during
// the step as a worker would: it runs step after step without blocking,
// and the program's other goroutines would otherwise wait for Go's 10 ms
// preemption (seen as 15 ms stalls of paced Gets beside one whole scan).
func TestGosched_StepHereGivesThePBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, TimeSlice: time.Millisecond})
		done, w := spawnWaiting(t, p, busyStep(5*time.Microsecond))
		synctest.Wait() // filed as waiting, the worker parked
		before := p.Stats()
		require.True(t, w.StepHere())
		require.NoError(t, <-done)
		after := p.Stats()
		require.Equal(t, before.SteppedHere+1, after.SteppedHere, "the step ran on the caller")
		assert.GreaterOrEqual(t, after.Goscheds-before.Goscheds, int64(5), "a 640 µs step here gives the P back every 100 µs")
	})
}

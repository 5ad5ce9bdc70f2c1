package readpool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The monitor's checks with the time passed in: no worker runs, the test
// starts and ends steps on the slots itself.

const testLongStep = 20 * time.Millisecond

// newTestMonitor watches the slots of n workers that never run.
func newTestMonitor(n int) (*monitor, []*slot) {
	m := &monitor{}
	m.init(testLongStep, newSlots(n).workers, nil, monitorEnv{})
	return m, m.slots
}

func TestMonitor_FlagsALongStepOnceAndUnflagsItOnce(t *testing.T) {
	m, slots := newTestMonitor(1)
	s := slots[0]
	assert.False(t, m.check(time.Hour), "no step: nothing running")

	m.stepStarted(s, 5*time.Millisecond)
	assert.True(t, m.check(24*time.Millisecond), "running")
	assert.Zero(t, m.stuck.Load(), "19 ms: not yet long")

	assert.True(t, m.check(25*time.Millisecond))
	assert.EqualValues(t, 1, m.stuck.Load(), "20 ms: stuck")
	assert.EqualValues(t, 1, m.longSteps.Load())

	for _, now := range []time.Duration{30 * time.Millisecond, time.Second} {
		assert.True(t, m.check(now))
		assert.EqualValues(t, 1, m.stuck.Load(), "flagged once, however often checked")
		assert.EqualValues(t, 1, m.longSteps.Load())
	}

	m.stepEnded(s)
	assert.Zero(t, m.stuck.Load(), "its end unflags it")
	m.stepEnded(s)
	assert.Zero(t, m.stuck.Load(), "once: never below zero")
	assert.False(t, m.check(2*time.Second))
	assert.Zero(t, m.stuck.Load())
	assert.EqualValues(t, 1, m.longSteps.Load(), "the count of long steps stays")
}

func TestMonitor_NextStepOnTheSlotIsItsOwn(t *testing.T) {
	m, slots := newTestMonitor(1)
	s := slots[0]
	m.stepStarted(s, 0)
	m.check(testLongStep)
	require.EqualValues(t, 1, m.stuck.Load())
	m.stepEnded(s)
	m.stepStarted(s, testLongStep+time.Millisecond)
	assert.True(t, m.check(testLongStep+2*time.Millisecond))
	assert.Zero(t, m.stuck.Load(), "a new step, not long yet")
	assert.True(t, m.check(2*testLongStep+time.Millisecond))
	assert.EqualValues(t, 1, m.stuck.Load(), "and flagged when it is")
	assert.EqualValues(t, 2, m.longSteps.Load())
}

// TestMonitor_StaleFlagClearedOnce: the monitor set a flag just as the step
// ended, after the step's own clear (the interleaving checkSlot's second
// look and its first clear are for); the monitor clears it, once.
func TestMonitor_StaleFlagClearedOnce(t *testing.T) {
	m, slots := newTestMonitor(1)
	s := slots[0]
	m.stepStarted(s, 0)
	start := s.stepStart.Load()
	m.stepEnded(s)
	// The monitor's raise and set, after the step's end.
	m.stuck.Add(1)
	s.longFor.Store(start)

	assert.False(t, m.check(time.Second))
	assert.Zero(t, m.stuck.Load(), "the stale flag cleared")
	assert.Zero(t, s.longFor.Load())
	assert.False(t, m.check(2*time.Second))
	assert.Zero(t, m.stuck.Load(), "once: never below zero")
	m.stepEnded(s)
	assert.Zero(t, m.stuck.Load(), "the step's own clear finds nothing")
}

func TestMonitor_WatchesEverySlotOfEveryWorker(t *testing.T) {
	m, slots := newTestMonitor(2)
	require.Len(t, slots, 4, "each worker's own and lent slots")
	for i, s := range slots {
		m.stepStarted(s, time.Duration(i)*time.Millisecond)
	}
	assert.True(t, m.check(testLongStep+time.Millisecond))
	assert.EqualValues(t, 2, m.stuck.Load(), "the steps from 0 and 1 ms")
	assert.True(t, m.check(testLongStep+3*time.Millisecond))
	assert.EqualValues(t, 4, m.stuck.Load())
	for _, s := range slots {
		m.stepEnded(s)
	}
	assert.Zero(t, m.stuck.Load())
	assert.False(t, m.anyRunning())
}

func TestMonitor_ExtrasOnlyWhileStuck(t *testing.T) {
	m, slots := newTestMonitor(2)
	r := extraRule{workers: 2, maxExtras: 100}
	toStart := func(extras int, ready bool) int { return r.toStart(extras, extraDemand{stuck: m.stuck.Load()}, ready) }
	tooMany := func(extras int) bool { return r.tooMany(extras, extraDemand{stuck: m.stuck.Load()}) }
	assert.Zero(t, toStart(0, true), "nothing stuck: no extra")
	assert.False(t, tooMany(0))
	assert.True(t, tooMany(1), "nothing stuck: an extra retires")

	m.stepStarted(slots[0], 0)
	m.check(testLongStep)
	require.EqualValues(t, 1, m.stuck.Load())
	assert.Equal(t, 1, toStart(0, true), "one per stuck step")
	assert.Zero(t, toStart(0, false), "nothing ready: no extra")
	assert.Zero(t, toStart(1, true), "one runs already")
	assert.False(t, tooMany(1))

	for _, s := range slots[1:] {
		m.stepStarted(s, 0)
	}
	m.check(testLongStep)
	require.EqualValues(t, 4, m.stuck.Load())
	assert.Equal(t, 2, toStart(0, true), "at most one per worker")
	assert.Equal(t, 1, toStart(1, true))

	for _, s := range slots {
		m.stepEnded(s)
	}
	assert.Zero(t, toStart(0, true), "no longer stuck")
	assert.True(t, tooMany(1), "the extra retires")
}

func TestMonitor_PokeWakesOnlyASleepingMonitor(t *testing.T) {
	m, slots := newTestMonitor(1)
	m.stepStarted(slots[0], 0)
	assert.Empty(t, m.wake, "watching: no token")

	m.parked.Store(true)
	m.stepEnded(slots[0])
	m.stepStarted(slots[0], time.Millisecond)
	assert.Len(t, m.wake, 1, "asleep: the step wakes it")
	assert.False(t, m.parked.Load())
	m.poke()
	assert.Len(t, m.wake, 1, "once")
}

package readpool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The held-task timer's rules with the time passed in: the timer itself is
// a recorder, nothing fires on its own.

// timerLog records what heldTimer asked of its timer.
type timerLog struct {
	sets  []time.Duration
	stops int
}

func (l *timerLog) env() timerEnv {
	return timerEnv{
		set:  func(d time.Duration) { l.sets = append(l.sets, d) },
		stop: func() { l.stops++ },
	}
}

const testRetry = time.Millisecond

func TestHeldTimer_Arm(t *testing.T) {
	for _, tc := range []struct {
		name       string
		at         time.Duration // armed for, before; 0 = not armed
		now, until time.Duration
		wantAt     time.Duration
		wantSets   []time.Duration
	}{
		{"not armed: armed for the held time", 0, 10, 50, 50, []time.Duration{40}},
		{"armed for later: re-armed earlier", 80, 10, 50, 50, []time.Duration{40}},
		{"armed for earlier: left alone", 30, 10, 50, 30, nil},
		{"armed for that time: left alone", 50, 10, 50, 50, nil},
		{"a held time already past: 1 ns from now", 0, 60, 50, 61, []time.Duration{1}},
		{"a held time now: 1 ns from now", 0, 60, 60, 61, []time.Duration{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log timerLog
			ht := heldTimer{at: tc.at, retry: testRetry, env: log.env()}
			ht.arm(tc.now, tc.until)
			assert.Equal(t, tc.wantAt, ht.at)
			assert.Equal(t, tc.wantSets, log.sets)
			assert.Zero(t, log.stops)
		})
	}
}

func TestHeldTimer_Fired(t *testing.T) {
	t.Run("woke a worker: disarmed", func(t *testing.T) {
		var log timerLog
		ht := heldTimer{at: 50, retry: testRetry, env: log.env()}
		ht.fired(50, true)
		assert.Zero(t, ht.at)
		assert.Empty(t, log.sets)

		ht.arm(60, 100)
		assert.Equal(t, time.Duration(100), ht.at, "armed afresh by the next held time")
		assert.Equal(t, []time.Duration{40}, log.sets)
	})
	t.Run("woke nobody: looks again a retry later", func(t *testing.T) {
		var log timerLog
		ht := heldTimer{at: 50, retry: testRetry, env: log.env()}
		ht.fired(52, false)
		assert.Equal(t, 52+testRetry, ht.at)
		assert.Equal(t, []time.Duration{testRetry}, log.sets)

		ht.arm(53, 60)
		assert.Equal(t, time.Duration(60), ht.at, "an earlier held time still re-arms it")
		ht.arm(54, 52+2*testRetry)
		assert.Equal(t, time.Duration(60), ht.at)
		assert.Equal(t, []time.Duration{testRetry, 7}, log.sets)
	})
}

func TestHeldTimer_StopIsForGood(t *testing.T) {
	var log timerLog
	ht := heldTimer{retry: testRetry, env: log.env()}
	ht.arm(0, 50)
	ht.stop()
	assert.Zero(t, ht.at)
	assert.Equal(t, 1, log.stops)

	ht.arm(10, 20)
	assert.Zero(t, ht.at, "not armed after Close")
	ht.fired(50, false) // a firing that was on its way when stopped
	assert.Zero(t, ht.at, "no retry after Close")
	assert.Equal(t, []time.Duration{50}, log.sets, "only the set before stop")
}

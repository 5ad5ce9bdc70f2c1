package readpool

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The hand-off decision alone, with the time passed in: no goroutine, no
// pool. Every row gives the state before, the input, and expects the
// decision and the state after.

const (
	testDelay   = 50 * time.Microsecond
	testGosched = 100 * time.Microsecond
)

func TestHandoff_After(t *testing.T) {
	type state struct {
		owed      bool
		owedSince time.Duration
	}
	for _, tc := range []struct {
		name        string
		before      state
		now         time.Duration
		lastGosched time.Duration
		readied     bool
		live        bool
		want        pAction
		after       state
	}{
		{"nothing owed, nothing readied: go on",
			state{}, 10 * time.Microsecond, 0, false, false, keepP, state{}},
		{"readied with only point reads live: deferred, the debt starts now",
			state{}, 10 * time.Microsecond, 0, true, false, keepP, state{true, 10 * time.Microsecond}},
		{"readied with long tasks live: at once",
			state{}, 10 * time.Microsecond, 0, true, true, handOffP, state{}},
		{"owed, long tasks now live: at once",
			state{true, 10 * time.Microsecond}, 20 * time.Microsecond, 0, false, true, handOffP, state{}},
		{"owed within the delay: go on",
			state{true, 10 * time.Microsecond}, 59 * time.Microsecond, 0, false, false, keepP, state{true, 10 * time.Microsecond}},
		{"owed for the delay: hand off",
			state{true, 10 * time.Microsecond}, 60 * time.Microsecond, 0, false, false, handOffP, state{}},
		{"readied again while owed: the debt keeps its start",
			state{true, 10 * time.Microsecond}, 40 * time.Microsecond, 0, true, false, keepP, state{true, 10 * time.Microsecond}},
		{"readied again past the delay: hand off",
			state{true, 10 * time.Microsecond}, 70 * time.Microsecond, 0, true, false, handOffP, state{}},
		{"nothing owed, the gosched period not over: go on",
			state{}, 150 * time.Microsecond, 51 * time.Microsecond, false, false, keepP, state{}},
		{"nothing owed, the gosched period over: gosched",
			state{}, 150 * time.Microsecond, 50 * time.Microsecond, false, false, goschedP, state{}},
		{"owed within the delay but the gosched period over: a gosched pays the debt, uncounted",
			state{true, 120 * time.Microsecond}, 150 * time.Microsecond, 0, false, false, goschedP, state{}},
		{"the gosched period counts from the last gosched, a step's own included",
			state{}, 1000 * time.Microsecond, 950 * time.Microsecond, false, false, keepP, state{}},
		{"long tasks live but nothing owed: go on",
			state{}, 10 * time.Microsecond, 0, false, true, keepP, state{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ho := handoff{delay: testDelay, goschedEvery: testGosched, owed: tc.before.owed, owedSince: tc.before.owedSince}
			got := ho.after(tc.now, tc.lastGosched, tc.readied, tc.live)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.after.owed, ho.owed, "owed after")
			if tc.after.owed {
				assert.Equal(t, tc.after.owedSince, ho.owedSince, "owedSince after")
			}
		})
	}
}

func TestHandoff_ZeroDelayHandsOffAtOnce(t *testing.T) {
	// A negative handoffDelay option becomes 0: every readied caller gets
	// the P after its own step.
	ho := handoff{delay: 0, goschedEvery: testGosched}
	assert.Equal(t, handOffP, ho.after(10*time.Microsecond, 0, true, false))
	assert.False(t, ho.owed)
}

func TestHandoff_Before(t *testing.T) {
	for _, tc := range []struct {
		owed, freshShort bool
		want             pAction
	}{
		{false, false, keepP},
		{false, true, keepP},
		{true, true, keepP},     // a fresh point read may go first
		{true, false, handOffP}, // a scan, or a task stepped before: the callers run first
	} {
		t.Run(fmt.Sprintf("owed=%v/freshShort=%v", tc.owed, tc.freshShort), func(t *testing.T) {
			ho := handoff{delay: testDelay, goschedEvery: testGosched, owed: tc.owed, owedSince: 5}
			assert.Equal(t, tc.want, ho.before(tc.freshShort))
			assert.Equal(t, tc.owed && tc.want == keepP, ho.owed, "owed after: paid only by a hand-off")
		})
	}
}

func TestHandoff_Park(t *testing.T) {
	ho := handoff{delay: testDelay, goschedEvery: testGosched, owed: true, owedSince: 5}
	assert.True(t, ho.park(), "parking while owed counts as a hand-off")
	assert.False(t, ho.owed)
	assert.False(t, ho.park(), "nothing owed: parking hands nothing off")
	assert.False(t, ho.owed)
}

func TestHandoff_WantsLiveOnlyWhileOwed(t *testing.T) {
	ho := handoff{delay: testDelay, goschedEvery: testGosched}
	assert.False(t, ho.wantsLive(false), "nothing owed, nothing readied: the answer does not depend on it")
	assert.True(t, ho.wantsLive(true))
	ho.owed = true
	assert.True(t, ho.wantsLive(false))
	// And indeed the answer differs by it only then.
	owed := ho
	assert.NotEqual(t, owed.after(1, 0, false, true), ho.after(1, 0, false, false))
}

// TestHandoff_ClosedLoopOfPointReads plays a worker's sequence: three
// fresh point reads whose callers wait, each 10 µs, then a scan's step.
// One hand-off serves the three callers if the delay covers them, and the
// scan's step comes after a hand-off in any case.
func TestHandoff_ClosedLoopOfPointReads(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		want  []pAction // per read: before, after; then before the scan
	}{
		{"delay covers them", testDelay, []pAction{keepP, keepP, keepP, keepP, keepP, keepP, handOffP}},
		{"delay covers two", 20 * time.Microsecond, []pAction{keepP, keepP, keepP, keepP, keepP, handOffP, keepP}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ho := handoff{delay: tc.delay, goschedEvery: time.Hour}
			var got []pAction
			now := time.Duration(0)
			for range 3 {
				got = append(got, ho.before(true))
				now += 10 * time.Microsecond
				got = append(got, ho.after(now, 0, true, false))
			}
			got = append(got, ho.before(false))
			assert.Equal(t, tc.want, got)
			assert.False(t, ho.owed)
		})
	}
}

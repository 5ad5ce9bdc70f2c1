package readpool

import (
	"sync/atomic"
	"time"
)

// The monitor notices workers stuck in one step (a user callback, a huge
// value) and lets temporary extra workers run the other ready tasks until
// the step returns — as Go's runtime hands a P off from a thread blocked in
// a system call. It sleeps while no step runs, so an idle pool burns no CPU.
//
// The protocol between a stepping goroutine and the monitor, per slot:
// stepStart is the pool time the current step began, +1 (0 = idle), stored
// by the stepping goroutine (stepStarted, stepEnded). longFor is the
// stepStart of a step the monitor found stuck (0 = none): every successful
// set of it is matched by one successful clear, stuck is raised before the
// set and lowered after the clear, so stuck counts flagged steps and never
// goes below 0. The monitor flags a step once (longSteps counts it), and
// whoever clears the flag first — the step's end, or the monitor finding
// it stale — lowers stuck, once.
//
// Extra workers are the pool's (Pool.startExtrasLocked, Pool.work); the
// monitor counts the stuck steps, and the pool's extraRule (blocking.go)
// allows one extra per stuck step while tasks are ready, at most one per
// worker, and none once no step is stuck (nor blocked off the CPU).

// monitor watches the workers' slots for steps longer than longStep. Its
// checks take the time as an argument; its loop (run) reads the clock and
// starts extras through its environment.
type monitor struct {
	longStep time.Duration
	slots    []*slot // the workers' own and lent slots
	env      monitorEnv

	stuck     atomic.Int64 // flagged steps that have not ended
	longSteps atomic.Int64 // steps ever flagged (Stats.LongSteps)
	// parked is set while the loop sleeps for want of running steps; the
	// first step to start wakes it (poke) through wake.
	parked atomic.Bool
	wake   chan struct{}
	quit   <-chan struct{} // closed when the loop must end
}

// monitorEnv is what the monitor's loop runs on, called only from the loop:
// the pool's clock, and what to do after a check that found stuck steps.
type monitorEnv struct {
	now     func() time.Duration
	onStuck func()
	// tick, if set, runs at every check — the pool's CPU controller
	// (cpu.go) — and reports whether it wants the next within fastPeriod.
	tick       func() bool
	fastPeriod time.Duration
}

// init readies m, in place (it sits in the Pool), to watch the slots of
// workers until quit closes.
func (m *monitor) init(longStep time.Duration, workers []*worker, quit <-chan struct{}, env monitorEnv) {
	m.longStep, m.env, m.quit, m.wake = longStep, env, quit, make(chan struct{}, 1)
	for _, w := range workers {
		m.slots = append(m.slots, &w.own, &w.lent)
	}
}

// stepStarted marks slot s as running a step from start, and wakes the
// monitor if it sleeps. On every step: one store and one load.
func (m *monitor) stepStarted(s *slot, start time.Duration) {
	s.stepStart.Store(int64(start) + 1)
	m.poke()
}

// stepEnded marks slot s idle and clears its step's flag, if the monitor
// set one.
func (m *monitor) stepEnded(s *slot) {
	s.stepStart.Store(0)
	if s.longFor.Swap(0) != 0 {
		m.stuck.Add(-1)
	}
}

// poke wakes the sleeping monitor; a no-op (one load) while it watches.
func (m *monitor) poke() {
	if m.parked.Load() && m.parked.CompareAndSwap(true, false) {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

// check flags the steps that have run longer than longStep at now, clears
// stale flags, and reports whether any step is running.
func (m *monitor) check(now time.Duration) bool {
	running := false
	for _, s := range m.slots {
		running = m.checkSlot(s, now) || running
	}
	return running
}

// checkSlot flags s's step if it has run longer than longStep and clears a
// stale flag; it reports whether a step is running there.
func (m *monitor) checkSlot(s *slot, now time.Duration) bool {
	start := s.stepStart.Load()
	if v := s.longFor.Load(); v != 0 && v != start && s.longFor.CompareAndSwap(v, 0) {
		m.stuck.Add(-1) // flagged a step that has since ended
	}
	if start == 0 {
		return false
	}
	if now-time.Duration(start-1) < m.longStep || s.longFor.Load() == start {
		return true
	}
	m.stuck.Add(1)
	if !s.longFor.CompareAndSwap(0, start) {
		m.stuck.Add(-1)
		return true
	}
	if s.stepStart.Load() != start {
		// It ended meanwhile; its goroutine may have missed the flag.
		if s.longFor.CompareAndSwap(start, 0) {
			m.stuck.Add(-1)
		}
		return true
	}
	m.longSteps.Add(1)
	return true
}

// anyRunning reports whether a step runs in any watched slot.
func (m *monitor) anyRunning() bool {
	for _, s := range m.slots {
		if s.stepStart.Load() != 0 {
			return true
		}
	}
	return false
}

// run is the monitor's loop, until quit closes: a check every quarter of
// longStep (at least 100 µs) — every fastPeriod while tick asks — and a
// sleep while no step runs and tick asks for nothing.
func (m *monitor) run() {
	period := max(m.longStep/4, 100*time.Microsecond)
	t := time.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-t.C:
		}
		running := m.check(m.env.now())
		if m.stuck.Load() > 0 {
			m.env.onStuck()
		}
		fast := m.env.tick != nil && m.env.tick()
		if !running && !fast {
			// Publish that we sleep, then look again: a step that started
			// before the flag was set is seen now, one after it pokes us.
			m.parked.Store(true)
			if !m.anyRunning() {
				select {
				case <-m.quit:
					return
				case <-m.wake:
				}
			}
			m.parked.Store(false)
		}
		if fast {
			t.Reset(min(period, m.env.fastPeriod))
			continue
		}
		t.Reset(period)
	}
}

// startExtrasLocked readies the extra workers the rule allows (blocking.go)
// — for stuck steps, or for the controller's slack — under p.mu.
func (p *Pool) startExtrasLocked() {
	ready := !p.closed && p.q.Len() > 0
	for range p.extras.toStart(p.demand(), ready) {
		signal(p.extraLocked()) // an idle extra's token channel is empty: no wait under the lock
	}
}

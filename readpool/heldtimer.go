package readpool

import "time"

// The held-task timer. A queue may hold a ready task back until a time it
// names (Queue.Held: a throttled group's task); such a task holds no worker,
// so when its time comes something must wake one to pop it. One timer per
// pool does, armed for the earliest held time. Its rules, all here:
//
//   - arm: whenever the queue's length is synced under Pool.mu with tasks
//     held, the timer is armed for the first held time, unless it is armed
//     for that time or earlier already; never for less than 1 ns from now.
//   - fire: it disarms, and a parked worker is woken to pop (Pop releases
//     the held tasks whose time has come). When none is parked with a free
//     slot, every worker is busy or lent and one of them pops after its
//     step; in case none does, the timer looks again retry (a time slice)
//     later.
//   - stop: at Close, for good; it never arms again.
//
// heldTimer is the rules with the time passed in; the timer itself is its
// environment (timerEnv): Go's time.AfterFunc in production, a recorder in
// tests. Every method runs under Pool.mu.

// heldTimer decides when the pool's held-task timer fires.
type heldTimer struct {
	at      time.Duration // the pool time it fires at; 0 = not armed
	retry   time.Duration // how soon it looks again when it woke no worker
	stopped bool
	env     timerEnv
}

// timerEnv is the timer that heldTimer drives.
type timerEnv struct {
	// set makes the timer fire once, d from now, replacing any pending
	// firing.
	set func(d time.Duration)
	// stop cancels a pending firing.
	stop func()
}

// goTimer is the production timerEnv: one time.AfterFunc running fire,
// made when it is first set. Its funcs run under Pool.mu, like heldTimer's
// methods.
func goTimer(fire func()) timerEnv {
	var t *time.Timer
	return timerEnv{
		set: func(d time.Duration) {
			if t == nil {
				t = time.AfterFunc(d, fire)
			} else {
				t.Reset(d)
			}
		},
		stop: func() {
			if t != nil {
				t.Stop()
			}
		},
	}
}

// arm makes the timer fire at until (at now+1 if that has passed) unless
// it fires at until or earlier already.
func (t *heldTimer) arm(now, until time.Duration) {
	if t.stopped || (t.at != 0 && until >= t.at) {
		return
	}
	t.at = max(until, now+1)
	t.env.set(t.at - now)
}

// fired disarms the timer that fired at now, and re-arms it retry later
// when it woke no worker.
func (t *heldTimer) fired(now time.Duration, woke bool) {
	t.at = 0
	if t.stopped || woke {
		return
	}
	t.at = now + t.retry
	t.env.set(t.retry)
}

// stop disarms the timer for good.
func (t *heldTimer) stop() {
	t.stopped = true
	t.at = 0
	t.env.stop()
}

package readpool

// Extra workers stand in for steps blocked off the CPU (blocking.go) or
// stuck on it (monitor.go), as many as extraRule allows for the demand. They
// are one type, shaped like spares (spare.go) and slots (slots.go), whose
// every move is below, under Pool.mu:
//
//   - take: the rule allows one more for the demand now, so one is counted
//     running — an idle one taken off the list (its owner signals it), or a
//     new one whose goroutine the owner starts, or whose slot a caller
//     borrows for a step inline (Pool.borrowExtra);
//   - park: a running one with nothing to do, or one too many, goes on the
//     idle list and sleeps until taken again;
//   - retire: one leaves the pool at Close, counted or not;
//   - closing: Close takes every idle one off the list, the started ones
//     counted running again, to be woken and exit.
//
// Whoever takes an extra off the idle list sends it one wake-up token
// (w.wake, capacity 1), as for workers and spares.
type extras struct {
	rule    extraRule
	running int                  // taken and not parked or retired: counted against the rule
	idle    []*worker            // asleep or about to be, LIFO
	all     map[*worker]struct{} // every extra that has not retired, for Stats
}

// toStart is how many more extras the rule allows for demand d, while
// tasks are ready (or not).
func (x *extras) toStart(d extraDemand, ready bool) int { return x.rule.toStart(x.running, d, ready) }

// tooMany reports whether, for demand d, a running extra should park.
func (x *extras) tooMany(d extraDemand) bool { return x.rule.tooMany(x.running, d) }

// take counts one more extra running if the rule allows one for demand d,
// and returns it: an idle one, or a new one whose goroutine is not
// started (w.started). Nil when the rule allows none.
func (x *extras) take(d extraDemand) *worker {
	if x.toStart(d, true) == 0 {
		return nil
	}
	x.running++
	if n := len(x.idle); n > 0 {
		w := x.idle[n-1]
		x.idle = x.idle[:n-1]
		w.parked = false
		return w
	}
	w := &worker{wake: make(chan struct{}, 1), extra: true}
	if x.all == nil {
		x.all = map[*worker]struct{}{}
	}
	x.all[w] = struct{}{}
	return w
}

// park puts w, running, on the idle list: it sleeps until taken.
func (x *extras) park(w *worker) {
	x.running--
	w.parked = true
	x.idle = append(x.idle, w)
}

// retire takes w out of the pool for good; counted says it was running.
func (x *extras) retire(w *worker, counted bool) {
	if counted {
		x.running--
	}
	delete(x.all, w)
}

// closing takes every idle extra off the list for Close: those with a
// goroutine are counted running again and returned in started, to be woken
// so that each sees the pool closed and exits; the others, never started,
// are returned in never for the caller to retire.
func (x *extras) closing() (started, never []*worker) {
	for _, w := range x.idle {
		w.parked = false
		if w.started {
			x.running++
			started = append(started, w)
		} else {
			never = append(never, w)
		}
	}
	x.idle = nil
	return started, never
}

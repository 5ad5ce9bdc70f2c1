package readpool

import "math/rand/v2"

// Slot lending. The pool is W execution slots rather than W goroutines: a
// parked worker's slot may be lent to a caller that runs a step on its own
// goroutine (an inline first step, Waker.StepHere), so that no hand-off is
// paid and still never more than W steps of this kind run at once. The
// borrower uses the worker's second slot (worker.lent), whose counters are
// the borrower's alone.
//
// Each worker's lend word holds one of three states; every move between
// them is here:
//
//	         parkLocked (Pool.mu)             borrow (CAS, no lock)
//	  awake ─────────────────────► free ─────────────────────────► lent
//	    ▲                           │  ▲                            │
//	    └─ unparkOneLocked, ────────┘  └──────── release ───────────┘
//	       wakeLocked (CAS, Pool.mu)              (store)
//
// A worker is on the parked list (under Pool.mu) while it is free or lent.
// Whoever moves it from free to awake takes it off the list and sends it
// its one wake-up token (signal, w.wake has room for one), after unlocking
// where it can. A lent slot is never woken by a pusher: the borrower,
// giving it back, looks for work queued meanwhile (Pool.giveBack). Close
// wakes the free ones; the lent ones are woken by their borrowers' giveBack,
// so Close's wait for the workers covers inline steps too.

// Lend states of a worker's execution slot.
const (
	lendAwake uint32 = iota // the worker runs, or is about to
	lendFree                // the worker is parked; a caller may borrow its slot
	lendLent                // the worker is parked and a caller runs a step in its place
)

// slots are the workers' execution slots and who holds them.
type slots struct {
	workers []*worker // fixed when the pool starts
	parked  []*worker // under Pool.mu: free or lent workers, LIFO (warm first)
}

// newSlots makes n workers, awake (their loops start them).
func newSlots(n int) slots {
	ws := make([]*worker, n)
	for i := range ws {
		ws[i] = &worker{wake: make(chan struct{}, 1)}
	}
	return slots{workers: ws}
}

// borrow lends the caller the slot of a parked worker (free → lent), or
// returns nil when none is free. Lock-free.
func (ss *slots) borrow() *worker {
	n := len(ss.workers)
	start := int(rand.Uint32() % uint32(n)) // per-thread state: cheap, no lock
	for i := range n {
		w := ss.workers[(start+i)%n]
		if w.lend.Load() == lendFree && w.lend.CompareAndSwap(lendFree, lendLent) {
			return w
		}
	}
	return nil
}

// release gives a borrowed slot back (lent → free); the worker stays
// parked. See Pool.giveBack for who then wakes it.
func (ss *slots) release(w *worker) { w.lend.Store(lendFree) }

// parkLocked puts the awake worker w on the parked list, its slot free to
// lend (awake → free).
func (ss *slots) parkLocked(w *worker) {
	w.lend.Store(lendFree)
	w.parked = true
	ss.parked = append(ss.parked, w)
}

// wakeLocked takes w off the parked list if it is there with its slot free
// (free → awake), and reports whether it did; the caller then signals it.
func (ss *slots) wakeLocked(w *worker) bool {
	if w.parked && w.lend.CompareAndSwap(lendFree, lendAwake) {
		ss.removeLocked(w)
		return true
	}
	return false
}

// unparkOneLocked takes the most recently parked worker whose slot is not
// lent off the parked list (free → awake), for the caller to signal after
// unlocking; nil if none.
func (ss *slots) unparkOneLocked() *worker {
	for i := len(ss.parked) - 1; i >= 0; i-- {
		if w := ss.parked[i]; w.lend.CompareAndSwap(lendFree, lendAwake) {
			ss.removeLocked(w)
			return w
		}
	}
	return nil
}

// freeLocked counts the parked workers whose slot is not lent: those that
// would take a task pushed now.
func (ss *slots) freeLocked() int {
	n := 0
	for _, w := range ss.parked {
		if w.lend.Load() == lendFree {
			n++
		}
	}
	return n
}

func (ss *slots) removeLocked(w *worker) {
	for i, pw := range ss.parked {
		if pw == w {
			ss.parked = append(ss.parked[:i], ss.parked[i+1:]...)
			break
		}
	}
	w.parked = false
}

// borrow lends the caller the slot of a parked worker, or returns nil.
func (p *Pool) borrow() *worker { return p.slots.borrow() }

// giveBack returns a borrowed slot. If work was queued meanwhile (a pusher
// found the slot lent and woke nobody) or the pool is closing, the worker is
// woken to take it. The store of lendFree before the load of queued here,
// and the pusher's store to queued before its CAS of lend, make sure that
// one of the two sees the other.
func (p *Pool) giveBack(w *worker) {
	p.slots.release(w)
	if p.queued.Load() == 0 && !p.closedFlag.Load() {
		return
	}
	p.mu.Lock()
	if p.slots.wakeLocked(w) {
		signal(w)
	}
	p.mu.Unlock()
}

// signal sends w, taken off a parked list, its wake-up token.
func signal(w *worker) {
	if w != nil {
		w.wake <- struct{}{}
	}
}

package readpool

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/internal/ewma"
	"github.com/coopkv/coopkv/readpool/internal/hist"
)

// slot is where a step runs: the StepContext, Gosched clock and counters of
// whoever holds it. stepStart and longFor are the protocol between the
// step's goroutine and the long-step monitor (see monitor.go).
type slot struct {
	sc          StepContext
	lastGosched time.Duration
	stepStart   atomic.Int64
	longFor     atomic.Int64
	avg         ewma.Duration // of step times, for estimated waits (estimate.go); written by the slot's holder alone
	firstWait   ewma.Duration // of first steps' waits, the same
	stats       workerStats
	_           [64]byte // keep slots of different goroutines off one cache line
}

// worker is one pool goroutine. While it is parked its slot may be lent to
// a caller that runs a step inline, in the worker's second slot, lent (see
// slots.go for the lend states).
type worker struct {
	own    slot
	lent   slot
	lend   atomic.Uint32
	wake   chan struct{} // capacity 1: whoever moves lend to lendAwake sends once
	extra  bool
	parked bool // on a parked list (slots', the spares' or the idle extras'); under Pool.mu
	// started says an extra's goroutine runs (an extra may exist only to
	// lend its slot, see borrowExtra), under Pool.mu; borrowed, that a
	// caller holds its slot: set and cleared by that caller under Pool.mu,
	// read by it alone (returnSlot).
	started, borrowed bool
	local             localQueue // tasks taken in a batch, or stolen (see local.go)
}

type workerStats struct {
	steps, yields, pendings atomic.Int64
	inline                  atomic.Int64 // first steps run inline on this slot
	completed               atomic.Int64 // tasks ended by a step on this slot
	handoffs                atomic.Int64 // Ps given to a caller a completion readied
	goscheds                atomic.Int64 // Ps given back to Go's scheduler, not to a caller
	here                    atomic.Int64 // steps run by the goroutine awaiting them (StepHere)
	batched                 atomic.Int64 // tasks taken into the local queue with another
	stolen                  atomic.Int64 // tasks stolen from another worker's local queue
	wait, step              hist.Histogram
}

func (s *workerStats) add(o *workerStats) {
	s.steps.Add(o.steps.Load())
	s.yields.Add(o.yields.Load())
	s.pendings.Add(o.pendings.Load())
	s.inline.Add(o.inline.Load())
	s.completed.Add(o.completed.Load())
	s.handoffs.Add(o.handoffs.Load())
	s.goscheds.Add(o.goscheds.Load())
	s.here.Add(o.here.Load())
	s.batched.Add(o.batched.Load())
	s.stolen.Add(o.stolen.Load())
	s.wait.Merge(&o.wait)
	s.step.Merge(&o.step)
}

// spinBeforePark is how many times a worker with nothing to do yields its
// P, watching the queue, before it sleeps. A task spawned meanwhile costs no
// futex sleep and wake-up; the worker's slot stays lendable while it spins.
const spinBeforePark = 4

// work is a worker's loop: file the last steps' tasks and pop the next
// under one lock (with a batch for the local queue when the queue is a
// Batcher), step them, cooperate with Go's scheduler, steal or park when
// there is nothing to do. An extra worker goes idle instead of parking, and
// as soon as there are more extras than the rule allows (blocking.go); it
// exits at Close.
func (p *Pool) work(w *worker) {
	defer p.wg.Done()
	s := &w.own
	s.lastGosched = p.now()
	now := s.lastGosched
	// filed are the steps run since the lock was last held, filed under
	// the next one; stops the tasks to end off the lock.
	filed := make([]filedStep, 0, localCap)
	var stops []stopped
	// What to do with the P between steps (see handoff.go).
	ho := handoff{delay: p.opts.handoffDelay, goschedEvery: p.goschedEvery}
	for {
		p.mu.Lock()
		for i := range filed {
			f := &filed[i]
			if _, stop := p.fileLocked(f.h, &f.r, false); stop != nil {
				stops = append(stops, stopped{f.h, stop})
			}
		}
		filed = filed[:0]
		if invariants {
			p.checkLocked()
		}
		var h *Handle
		if w.local.len() == 0 {
			if len(stops) == 0 && w.extra && p.extraTooManyLocked() {
				if !p.idleExtraLocked(w) {
					return
				}
				s.lastGosched = p.now()
				now = s.lastGosched
				continue
			}
			var stop error
			h, stop = p.popLocked(now)
			switch {
			case stop != nil:
				stops = append(stops, stopped{h, stop})
				h = nil
			case h != nil:
				stops = p.takeBatchLocked(w, h, now, stops)
			case p.stealLocked(w):
			case len(stops) > 0:
				// End them first: parking could wait long.
			case w.extra:
				if !p.idleExtraLocked(w) {
					return
				}
				s.lastGosched = p.now()
				now = s.lastGosched
				continue
			case p.closed:
				p.mu.Unlock()
				return
			default:
				if ho.park() {
					s.stats.handoffs.Add(1)
				}
				p.park(w)
				s.lastGosched = p.now()
				now = s.lastGosched
				continue
			}
		}
		p.mu.Unlock()
		if len(stops) > 0 {
			p.endAll(s, stops)
			stops = stops[:0]
			now = p.now()
		}
		// Step h, then the local queue, filing their steps at the next
		// lock; a task that goes on is filed at once.
		for {
			if h == nil {
				if h = w.local.pop(); h == nil {
					break
				}
				if h.stopReason() != nil || p.closedFlag.Load() {
					// Cancelled, or the pool closed, while it waited
					// here: fileLocked ends it.
					filed = append(filed, filedStep{h, unstepped(now)})
					h = nil
					continue
				}
			}
			if a := ho.before(h.short && !h.stepped); a != keepP {
				now = p.giveP(s, a)
			}
			r, readied := p.runStep(s, h, now, true)
			filed = append(filed, filedStep{h, r})
			h = nil
			// The end of one step is the start of the next pop: one clock
			// read per step, not two.
			now = r.end
			live := ho.wantsLive(readied) && p.longLive.Load() > 0
			if a := ho.after(now, s.lastGosched, readied, live); a != keepP {
				now = p.giveP(s, a)
			}
			if !r.finished() {
				break // back in the queue or waiting, now
			}
		}
	}
}

// giveP gives slot s's P up as the hand-off decision a (not keepP) says,
// and returns the pool time after it.
func (p *Pool) giveP(s *slot, a pAction) time.Duration {
	if a == handOffP {
		s.stats.handoffs.Add(1)
	} else {
		s.stats.goscheds.Add(1)
	}
	runtime.Gosched()
	s.lastGosched = p.now()
	return s.lastGosched
}

// filedStep is a step whose filing (fileLocked) waits for the next lock.
type filedStep struct {
	h *Handle
	r stepResult
}

// unstepped is the result filed for a taken task that did not step (see
// local.go): a yield of no time, which fileLocked ends when the task must
// stop and requeues otherwise.
func unstepped(now time.Duration) stepResult {
	return stepResult{status: Yield, start: now, end: now}
}

// endAll ends the stopped tasks off the lock, counting them on slot s.
func (p *Pool) endAll(s *slot, stops []stopped) {
	for _, st := range stops {
		p.end(st.h, st.err, &s.stats.completed)
	}
}

// park puts w, under p.mu (which it releases), on the parked list, spins a
// little, and sleeps until a pusher, a borrower's giveBack, the held-task
// timer or Close wakes it. It returns without the lock.
func (p *Pool) park(w *worker) {
	p.slots.parkLocked(w)
	p.mu.Unlock()
	for i := 0; i < spinBeforePark && p.queued.Load() == 0 && !p.closedFlag.Load(); i++ {
		runtime.Gosched()
	}
	p.mu.Lock()
	if (p.q.Len() > 0 || p.closed) && p.slots.wakeLocked(w) {
		// Work arrived and nobody woke us for it: take the slot back.
		p.mu.Unlock()
		return
	}
	// Sleep. Already woken: a token waits in w.wake. Free or lent: a
	// pusher, the borrower's giveBack or Close will wake us.
	p.mu.Unlock()
	<-w.wake
}

// retireLocked ends an extra worker at Close; it releases p.mu. Work left
// in the queue goes to a parked worker.
func (p *Pool) retireLocked(w *worker) {
	p.retireStatsLocked(w, true)
	var wk *worker
	if p.q.Len() > 0 {
		wk = p.slots.unparkOneLocked()
	}
	p.mu.Unlock()
	signal(wk)
}

// retireStatsLocked retires the extra w (counted: it was running) and
// keeps its figures.
func (p *Pool) retireStatsLocked(w *worker, counted bool) {
	p.retired.add(&w.own.stats)
	p.retired.add(&w.lent.stats)
	p.extras.retire(w, counted)
}

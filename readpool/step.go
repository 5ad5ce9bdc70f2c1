package readpool

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"
)

// StepContext is what a step sees of the pool: its context, its handle, and
// whether it should yield. It is valid only during the Step call it was
// passed to; a task must not keep it.
type StepContext struct {
	h        *Handle
	p        *Pool
	w        *slot
	deadline time.Duration
	budget   int
	used     int
	// goschedEvery is how long the step keeps its P before it gives it
	// back to Go's scheduler; 0: never (a caller's own goroutine).
	goschedEvery time.Duration
	// class is the step's urgency class (Entry.Class): it yields early
	// when the queue's hint says more urgent work waits.
	class int64
	rows  int64
	bytes int64
}

// Context returns the context the task was spawned with.
func (sc *StepContext) Context() context.Context { return sc.h.ctx }

// Handle returns the handle Spawn returned for the task, or nil for a task
// started with Go, whose handle the pool reuses: use Waker to be woken.
func (sc *StepContext) Handle() *Handle {
	if !sc.h.stats {
		return nil
	}
	return sc.h
}

// Waker returns what wakes this task when it returns Pending: give it to
// the producer of the awaited event. It stays safe to use after the task
// has ended (a no-op then), whatever happens to the task's handle.
func (sc *StepContext) Waker() Waker { return Waker{sc.h, sc.h.gen} }

// Preempted reports whether more urgent work waits for a worker than this
// step (the queue's preemption hint is below the step's class), without
// counting the step's units: a step in the middle of a long unit of work —
// a scan filling a batch — may end the unit early, so that the urgent task
// waits for part of a unit, not all of it. ShouldYield then says to yield.
func (sc *StepContext) Preempted() bool { return sc.class > sc.p.pre.Load() }

// sliceUsed reports whether the step has used its time slice, without
// counting a unit. One clock read.
func (sc *StepContext) sliceUsed() bool { return sc.p.now() >= sc.deadline }

// Overdue reports whether a step in the middle of a long unit of work — a
// scan filling a batch — should end the unit early: more urgent work waits
// (Preempted), or reads are blocking on a slow disk (Pool.EnterBlocking)
// and the step has used its slice. There a batch of 1,024 rows of 1 KB is
// 256 reads, a quarter of a second at 1 ms a read. In memory a unit runs
// to its end: a unit is then well under a slice, and cutting it only adds
// steps, each a trip through the queue for the Gets beside it to wait
// behind (cmd/kvbench's README, The pool's constants).
func (sc *StepContext) Overdue() bool {
	return sc.Preempted() || sc.p.readsBlocked() && sc.sliceUsed()
}

// ShouldYield is asked before each unit of work: true means the step has
// used its time slice or its budget, or more urgent work waits (the queue's
// Preemption hint), and should return Yield without doing the unit. A false
// answer uses one unit of budget. The first call of a step is always false,
// so every step makes progress.
//
// On a pool worker it also gives the worker's P back to the Go scheduler
// every quarter slice or so, so that the embedding program's goroutines are
// not left waiting for Go's 10 ms preemption while steps run back to back.
func (sc *StepContext) ShouldYield() bool {
	if sc.used > 0 {
		if sc.used >= sc.budget {
			return true
		}
		if sc.Preempted() {
			// Urgent work waits for one unit of this step, not all of it.
			sc.p.preempted.Add(1)
			return true
		}
		now := sc.p.now()
		if now >= sc.deadline {
			return true
		}
		if sc.goschedEvery > 0 && now-sc.w.lastGosched >= sc.goschedEvery {
			runtime.Gosched()
			sc.w.lastGosched = sc.p.now()
			sc.w.stats.goscheds.Add(1)
		}
	}
	sc.used++
	return false
}

// Demoted reports whether the step runs at the queue's lowest priority
// (Entry.Demoted: a runaway read in cooldown), for a task that then does
// its work in smaller units.
func (sc *StepContext) Demoted() bool { return sc.h.e.Demoted }

// Charge records what the step read, for the task's statistics and for
// resource control.
func (sc *StepContext) Charge(rows, bytes int64) {
	sc.rows += rows
	sc.bytes += bytes
}

// stepResult is what one step did: how it ended and when.
type stepResult struct {
	status     Status
	perr       error // the step panicked
	start, end time.Duration
}

func (r *stepResult) elapsed() time.Duration { return r.end - r.start }

// finished reports whether the step ended its task.
func (r *stepResult) finished() bool { return r.perr != nil || r.status == Ready }

// runStep is how every goroutine steps a task — a worker, a spare, and a
// caller in a lent slot (an inline first step, StepHere): one step of h
// (POLLING, the caller's) on slot w from pool time start, its figures
// recorded, then, if the step ended the task, its completion
// (completeStep), on this goroutine and off the lock; readied is
// completeStep's. Filing the step with the queue (fileLocked) is left to
// the caller, at its next lock: a worker files a batch of steps under one.
func (p *Pool) runStep(w *slot, h *Handle, start time.Duration, gosched bool) (r stepResult, readied bool) {
	e := &h.e
	wait := start - e.enqueued
	sc := &w.sc
	*sc = StepContext{h: h, p: p, w: w, deadline: start + p.opts.TimeSlice, budget: p.opts.Budget, class: e.Class}
	if gosched {
		sc.goschedEvery = p.goschedEvery
		if e.Demoted {
			sc.goschedEvery /= demotedGoschedDiv
		}
	}
	p.mon.stepStarted(w, start)

	status, perr := callStep(h.t, sc)

	end := p.now()
	p.mon.stepEnded(w)
	elapsed := end - start
	first := !h.stepped
	h.stepped = true
	e.Elapsed += elapsed
	e.Rows += sc.rows
	if h.stats {
		h.steps.Add(1)
		h.wait.Add(int64(wait))
		h.exec.Add(int64(elapsed))
		if sc.rows != 0 || sc.bytes != 0 {
			h.rows.Add(sc.rows)
			h.bytes.Add(sc.bytes)
		}
	}
	w.stats.steps.Add(1)
	w.stats.wait.Record(wait)
	w.stats.step.Record(elapsed)
	w.avg.Record(elapsed)
	if first {
		w.firstWait.Record(wait)
		if e.maxWait > 0 {
			p.waits.start(wait, e.maxWait, e.estimate)
		}
	}
	if a := p.opts.Accountant; a != nil {
		a.Charge(e, Usage{Exec: elapsed, Rows: sc.rows, Bytes: sc.bytes, First: first})
	}
	*sc = StepContext{} // the context is dead: drop references

	r = stepResult{status: status, perr: perr, start: start, end: end}
	if r.finished() {
		return r, p.completeStep(w, h, &r)
	}
	if p.opts.Governor != nil {
		p.govern(h)
	}
	switch {
	case status == Yield:
		w.stats.yields.Add(1)
		if h.stats {
			h.yields.Add(1)
		}
		h.watch()
	default:
		w.stats.pendings.Add(1)
		if h.stats {
			h.pendings.Add(1)
		}
		h.watch()
	}
	return r, false
}

func callStep(t Task, sc *StepContext) (s Status, perr error) {
	defer func() {
		if r := recover(); r != nil {
			perr = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return t.Step(sc), nil
}

// completeStep ends a task whose step finished it, on the stepping
// goroutine. The queue's accounting of the step follows under the pool's
// lock (fileLocked), after the task's Done: the caller waiting for the
// result is not kept waiting for the lock. It reports whether Done readied
// a spawner blocked on it (Awaited), asked before Done, after which the
// task may be gone.
func (p *Pool) completeStep(w *slot, h *Handle, r *stepResult) (readied bool) {
	h.markCompleted()
	if a, ok := h.t.(Awaited); ok && r.perr == nil {
		readied = a.Waiting()
	}
	p.complete(h, r.perr, &w.stats.completed)
	return readied
}

// fileLocked accounts a step of an adopted task with the queue and files
// the task by the step's result: finished tasks (already completed by
// completeStep) leave, yielding ones go back in the queue, pending ones
// wait — unless the task must stop (cancelled, context done, pool closed),
// in which case it is returned with the reason, to be completed once the
// lock is released. With unpark it returns a parked worker to wake for a
// requeued task.
func (p *Pool) fileLocked(h *Handle, r *stepResult, unpark bool) (w *worker, stop error) {
	e := &h.e
	p.running--
	if r.finished() {
		p.doneLocked(e, r.elapsed(), r.end)
		p.recycle(h) // the last touch: completeStep called Done already
		return nil, nil
	}
	if r.status == Pending && h.park() {
		p.doneLocked(e, r.elapsed(), r.end)
		if p.closed {
			// Close has swept the waiting list already.
			h.abort(h.gen, stateWaiting)
			return nil, ErrClosed
		}
		p.addWaitingLocked(h)
		return nil, nil
	}
	// A Yield, or a Pending that was woken (or cancelled) during its step.
	h.requeue()
	err := h.stopReason()
	if err == nil && p.closed {
		err = ErrClosed
	}
	if err != nil {
		h.abort(h.gen, stateQueued)
		p.doneLocked(e, r.elapsed(), r.end)
		return nil, err
	}
	// Push before Done, so that the MLFQ sees the task's level still busy
	// and does not treat its return as a level back from idleness.
	w = p.pushLocked(h, r.end, unpark)
	p.doneLocked(e, r.elapsed(), r.end)
	return w, nil
}

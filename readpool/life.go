package readpool

import (
	"errors"
	"sync/atomic"
	"time"
)

// The pool's side of a task's life: into and out of the queue, into and
// out of the waiting list, and the one routine that ends every task.

// pushLocked queues a task its owner has just moved to QUEUED and, with
// unpark, when the queue has ready work, picks a parked worker whose slot is
// not lent to run it; the caller wakes that worker (signal) after
// unlocking, so that the goroutine hand-off is not made under the lock. A
// worker requeueing the task it stepped does not unpark another: it pops
// next itself.
func (p *Pool) pushLocked(h *Handle, now time.Duration, unpark bool) *worker {
	h.e.enqueued = now
	p.q.Push(&h.e, now)
	if n := p.syncQueuedLocked(now); !unpark || n == 0 {
		return nil // held back: the timer will wake a worker
	}
	if w := p.slots.unparkOneLocked(); w != nil {
		return w
	}
	// Every worker is busy or lent: urgent work goes to a spare, and any
	// work to an extra while a step is blocked off the CPU (blocking.go).
	if w := p.wakeSpareLocked(); w != nil {
		return w
	}
	return p.extraLocked()
}

// popLocked pops the next ready task and takes it to POLLING; it counts
// among the running tasks from here until fileLocked. A popped task that
// must not step (its context ended, or it was cancelled, a moment ago: the
// watch's goroutine has not reached it yet) is returned with the reason
// instead, completed and uncounted, for the caller to end after unlocking.
func (p *Pool) popLocked(now time.Duration) (*Handle, error) {
	return p.takeLocked(p.q.Pop(now), now)
}

// takeLocked is popLocked for an entry e the queue has just popped (nil:
// none).
func (p *Pool) takeLocked(e *Entry, now time.Duration) (*Handle, error) {
	p.syncQueuedLocked(now)
	if e == nil {
		return nil, nil
	}
	h := e.h
	if !h.take() {
		panic("readpool: popped a task that was not queued")
	}
	if err := h.stopReason(); err != nil {
		p.doneLocked(e, 0, now)
		h.markCompleted()
		p.dropped.Add(1)
		return h, err
	}
	p.running++
	return h, nil
}

// syncQueuedLocked mirrors the queue's length for lock-free readers, arms
// the timer for the queue's held tasks (heldtimer.go), and returns the
// length.
func (p *Pool) syncQueuedLocked(now time.Duration) int64 {
	n := int64(p.q.Len())
	if p.queued.Load() != n {
		p.queued.Store(n)
	}
	if n, until := p.q.Held(); n > 0 {
		p.held.arm(now, until)
	}
	return n
}

// heldReady runs when the first held task's time has come: a parked worker
// is woken to pop it (Pop releases held tasks whose time has come). See
// heldtimer.go for when the timer looks again.
func (p *Pool) heldReady() {
	p.mu.Lock()
	var w *worker
	if !p.closed {
		if w = p.slots.unparkOneLocked(); w == nil {
			w = p.extraLocked()
		}
	}
	p.held.fired(p.now(), w != nil)
	p.mu.Unlock()
	signal(w)
}

// Kick makes a worker look at the queue now, held tasks included (Pop
// releases those the queue no longer holds back). A Kickable queue calls it
// after its policy changed from outside the pool; with no worker parked,
// the busy ones look after their current step.
func (p *Pool) Kick() {
	p.mu.Lock()
	var w *worker
	if n, _ := p.q.Held(); n > 0 && !p.closed {
		w = p.slots.unparkOneLocked()
	}
	p.mu.Unlock()
	signal(w)
}

// wakeWaiting moves generation gen's WAITING task back to the queue for a
// Wake.
func (p *Pool) wakeWaiting(h *Handle, gen uint64) {
	p.mu.Lock()
	if !h.unpark(gen) {
		// Cancelled, or woken by someone else, since the caller looked.
		p.mu.Unlock()
		return
	}
	h.noteWake()
	p.wakes.Add(1)
	p.removeWaitingLocked(h)
	w := p.pushLocked(h, p.now(), true)
	p.mu.Unlock()
	signal(w)
}

// abort ends a QUEUED or WAITING task for Handle.Cancel (a cancel, or its
// context's end), on the calling goroutine. It reports false when the task
// was in neither state by the time the lock was taken.
func (p *Pool) abort(h *Handle, gen uint64, err error) bool {
	p.mu.Lock()
	switch {
	case h.abort(gen, stateQueued):
		if !p.q.Remove(&h.e) {
			panic("readpool: a queued task was not in its queue")
		}
		p.syncQueuedLocked(p.now())
		p.dropped.Add(1)
	case h.abort(gen, stateWaiting):
		p.removeWaitingLocked(h)
	default:
		p.mu.Unlock()
		return false
	}
	p.endOffLocked(h, err)
	return true
}

// end ends h for good: complete, then recycle (the last touch), counting it
// in completed. A task a step ended is the exception: completeStep ends it
// on the stepping goroutine, and fileLocked recycles it after the queue's
// accounting, under the next lock.
func (p *Pool) end(h *Handle, err error, completed *atomic.Int64) {
	p.complete(h, err, completed)
	p.recycle(h)
}

// endOffLocked ends h, which the caller took out of every list under
// p.mu, off the workers: on the goroutine that found it must end (a
// spawner, a cancel, a context's end). It releases p.mu. Close waits for
// such ends (Pool.ending), so the count is taken before the lock goes.
func (p *Pool) endOffLocked(h *Handle, err error) {
	p.ending.Add(1)
	p.mu.Unlock()
	p.end(h, err, &p.completedOff)
	p.ending.Done()
}

// complete ends a task: the caller has moved it to COMPLETED and taken it
// out of the queue and the waiting list. It deregisters the context watch,
// counts how the task ended (in completed: the stepping slot's counter, or
// the pool's for tasks ended off the workers, so the hot path shares no
// counter), and calls its Done — the last thing the pool does with the
// task, on every path.
func (p *Pool) complete(h *Handle, err error, completed *atomic.Int64) {
	if h.stopWatch != nil {
		h.stopWatch()
	}
	checkOnce(h)
	if !h.short {
		p.longLive.Add(-1)
	}
	if err != nil {
		var pe *PanicError
		switch {
		case errors.As(err, &pe):
			p.panicked.Add(1)
		case !errors.Is(err, ErrClosed):
			p.cancelled.Add(1)
		}
	}
	completed.Add(1)
	callDone(h.t, err, &p.panicked)
}

func callDone(t Task, err error, panicked *atomic.Int64) {
	defer func() {
		if recover() != nil {
			panicked.Add(1) // the task's own cleanup failed; the pool goes on
		}
	}()
	t.Done(err)
}

// The waiting list: tasks that returned Pending, so Close can end them.
// Unlike slot lending or the monitor it needs no type of its own: it has
// no clock and no decision, and its one rule (under Pool.mu a WAITING task
// is in it) is the task state word's, stated in task.go.

func (p *Pool) addWaitingLocked(h *Handle) {
	h.waitPrev = p.waiting.waitPrev
	h.waitNext = &p.waiting
	h.waitPrev.waitNext = h
	p.waiting.waitPrev = h
	p.waitingN++
}

func (p *Pool) removeWaitingLocked(h *Handle) {
	h.waitPrev.waitNext = h.waitNext
	h.waitNext.waitPrev = h.waitPrev
	h.waitPrev, h.waitNext = nil, nil
	p.waitingN--
}

// doneLocked tells the queue a step of e is done, and mirrors its length
// again: a Done may make work ready (a cooled slot passed on: cooled.go).
func (p *Pool) doneLocked(e *Entry, elapsed, now time.Duration) {
	p.q.Done(e, elapsed, now)
	p.syncQueuedLocked(now)
}

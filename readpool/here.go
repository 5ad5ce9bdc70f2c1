package readpool

// StepHere runs the next step of a task that waits for a wake (it returned
// Pending) on the calling goroutine, in the slot of a parked worker, instead
// of handing it to a worker: for the goroutine that would otherwise block
// until the task produced something — a scan's consumer that reads its
// batches faster than a hand-off between goroutines costs. The step is
// filed as a worker's would be, and the queue decides as it would on a
// wake: the task goes through Push and Pop, so it runs here only if the
// queue would pop it now (a throttled group's task is held back instead).
// The step gives the P back to Go's scheduler as a worker's would (see
// ShouldYield): a consumer that steps its scan here batch after batch never
// blocks, and would otherwise keep its P until Go's 10 ms preemption while
// the program's other goroutines wait for it.
//
// StepHere reports true when it took the wake: it stepped the task, or
// queued it (held back, or cancelled meanwhile) as Wake would. It reports
// false, and does nothing, when stepping here would overtake queued work,
// no worker is parked, or the task was not waiting (woken or ended by
// someone else); the caller then calls Wake.
func (w Waker) StepHere() bool {
	h := w.h
	if h == nil {
		return false
	}
	p := h.p
	if p.queued.Load() != 0 || h.state.Load() != w.gen<<stateBits|stateWaiting {
		return false // the cheap looks first: no slot taken for nothing
	}
	wk := p.borrow()
	if wk == nil {
		return false
	}
	p.mu.Lock()
	// Not after Close, not ahead of queued work or of a held task whose
	// time may come at our Pop, and only while the task still waits.
	if held, _ := p.q.Held(); p.closed || p.q.Len() != 0 || held != 0 || !h.unpark(w.gen) {
		p.mu.Unlock()
		p.giveBack(wk)
		return false
	}
	h.noteWake()
	p.wakes.Add(1)
	p.removeWaitingLocked(h)
	now := p.now()
	h.e.enqueued = now
	p.q.Push(&h.e, now)
	got, stop := p.popLocked(now) // ours, or nil when the queue holds it back
	if got != nil && got != h {
		panic("readpool: StepHere popped another task from an empty queue")
	}
	p.mu.Unlock()
	switch {
	case got == nil:
		// Held back: queued like any wake; the queue's timer releases it.
		p.giveBack(wk)
		return true
	case stop != nil:
		// Cancelled or out of time a moment ago: popLocked completed it.
		p.end(h, stop, &wk.lent.stats.completed)
		p.giveBack(wk)
		return true
	}
	s := &wk.lent
	s.stats.here.Add(1)
	r, _ := p.runStep(s, h, now, true)
	p.mu.Lock()
	p.fileLentLocked(wk, h, &r)
	return true
}

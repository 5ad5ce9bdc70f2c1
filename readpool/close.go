package readpool

// Close stops the pool: Spawn fails with ErrClosed from now on, queued, held
// and waiting tasks are completed with ErrClosed, running steps are waited
// for (a task that would go on is completed with ErrClosed instead). When
// Close returns every accepted task's Done has returned and no pool
// goroutine is left. Close is idempotent; concurrent calls wait for the
// first.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.closeDone
		return nil
	}
	p.closed = true
	p.closedFlag.Store(true)
	now := p.now()
	var ended []*Handle
	// Pop(Forever) releases held tasks too.
	for e := p.q.Pop(Forever); e != nil; e = p.q.Pop(Forever) {
		p.q.Done(e, 0, now)
		if !e.h.abort(e.h.gen, stateQueued) {
			panic("readpool: a queued task was not QUEUED")
		}
		ended = append(ended, e.h)
	}
	p.queued.Store(0)
	for h := p.waiting.waitNext; h != &p.waiting; {
		next := h.waitNext
		if !h.abort(h.gen, stateWaiting) {
			panic("readpool: a waiting task was not WAITING")
		}
		p.removeWaitingLocked(h)
		ended = append(ended, h)
		h = next
	}
	p.held.stop()
	// Wake the parked workers so they exit; one whose slot is lent is woken
	// by its borrower's giveBack, so the wait below also covers steps
	// running inline.
	for w := p.slots.unparkOneLocked(); w != nil; w = p.slots.unparkOneLocked() {
		signal(w)
	}
	spares := p.spares.unparkAllLocked()
	idle := p.wakeIdleExtrasForCloseLocked()
	p.mu.Unlock()
	for _, w := range spares {
		signal(w)
	}
	for _, w := range idle {
		signal(w)
	}

	for _, h := range ended {
		p.end(h, ErrClosed, &p.completedOff)
	}
	close(p.quit)
	p.wg.Wait()
	p.ending.Wait()
	p.inv.checkDrained(p)
	close(p.closeDone)
	return nil
}

package readpool

import "context"

// Spawn hands t to the pool. It fails at once with ErrBusy when MaxTasks
// tasks are queued or running and with ErrClosed after Close; then t is not
// started and its Done is not called. Otherwise Done will be called exactly
// once — at once, on this goroutine, when ctx is already done. A task whose
// context ends while it is queued or waiting is ended at once, on the
// goroutine that saw the context end, without waiting for a worker.
func (p *Pool) Spawn(ctx context.Context, t Task, o SpawnOptions) (*Handle, error) {
	return p.spawn(ctx, t, o, true)
}

// Go is Spawn for a task nobody needs a handle to — a Get, whose caller
// waits for the task's Done. The task's figures are not kept, and its
// handle is reused once it has ended (no allocation per task); the task
// itself reaches it only through StepContext.Waker, which stays safe.
func (p *Pool) Go(ctx context.Context, t Task, o SpawnOptions) error {
	_, err := p.spawn(ctx, t, o, false)
	return err
}

func (p *Pool) spawn(ctx context.Context, t Task, o SpawnOptions, stats bool) (*Handle, error) {
	if p.closedFlag.Load() {
		return nil, ErrClosed
	}
	// Every handle comes POLLING: the spawner owns the task, as a worker
	// owns a stepping one, until it queues it; a cancel meanwhile (the
	// context watch) is noted, not acted on.
	var h *Handle
	if stats {
		h = newHandle(p)
		h.stats = true
	} else {
		h = p.handles.Get().(*Handle)
	}
	h.t, h.ctx, h.short = t, ctx, o.Short
	h.e = o.entry()
	h.e.h = h
	if err := ctx.Err(); err != nil {
		return p.spawnDone(h, err)
	}
	if o.Inline && p.queued.Load() == 0 && p.q.MayInline(&h.e) {
		if w := p.borrow(); w != nil {
			return p.spawnInline(h, w)
		}
		if p.readsBlocked() {
			// Reads wait on the disk: an extra's slot may be free.
			if w := p.borrowExtra(); w != nil {
				return p.spawnInline(h, w)
			}
		}
	}
	h.watch()
	now := p.now()
	p.mu.Lock()
	if err := p.admitLocked(&h.e); err != nil {
		p.mu.Unlock()
		if h.stopWatch != nil {
			h.stopWatch()
		}
		return nil, err
	}
	p.accept(h)
	h.adopted = true
	h.requeue()
	var stop error
	if h.stopWatch != nil { // without a watch nothing can have stopped it
		stop = h.stopReason()
	}
	if err := stop; err != nil {
		// The context ended since we looked.
		h.abort(h.gen, stateQueued)
		p.dropped.Add(1)
		p.endOffLocked(h, err)
		return h, nil
	}
	w := p.pushLocked(h, now, true)
	p.mu.Unlock()
	signal(w)
	return h, nil
}

// admitLocked says whether the pool takes one more task: not after Close,
// and not with MaxTasks queued (ready) or running — or as the queue says,
// when it is an Admitter. Tasks the queue holds back and tasks waiting for a
// wake do not count (tikv #18491). A task with a MaxQueueWait is refused,
// with its estimate, when the estimate exceeds it.
func (p *Pool) admitLocked(e *Entry) error {
	if p.closed {
		return ErrClosed
	}
	if a, ok := p.opts.Queue.(Admitter); ok {
		if !a.Admit(e, p.opts.MaxTasks) {
			p.rejected.Add(1)
			return ErrBusy
		}
	} else if p.running+p.q.Len() >= p.opts.MaxTasks {
		p.rejected.Add(1)
		return ErrBusy
	}
	if e.maxWait > 0 {
		e.estimate = p.estimateLocked(e)
		if e.estimate > e.maxWait {
			p.waits.refused.Add(1)
			return &BusyError{EstimatedWait: e.estimate}
		}
	}
	p.spawned++
	return nil
}

// spawnDone accepts a task whose context is already done and ends it on
// the spawner's goroutine, without a step.
func (p *Pool) spawnDone(h *Handle, err error) (*Handle, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrClosed
	}
	p.spawned++
	p.accept(h)
	p.dropped.Add(1)
	h.markCompleted()
	p.endOffLocked(h, err)
	return h, nil
}

// spawnInline runs h's first step on the caller's goroutine in w's slot.
// A task that finishes in that step touches no shared lock or counter (the
// queue does not see it either: it overtook nobody and took no time from
// anyone waiting); one that yields or waits is adopted by the pool.
func (p *Pool) spawnInline(h *Handle, w *worker) (*Handle, error) {
	if p.closedFlag.Load() { // Close may have missed our borrow: see giveBack
		p.returnSlot(w)
		return nil, ErrClosed
	}
	p.accept(h)
	s := &w.lent
	s.stats.inline.Add(1)
	now := p.now()
	h.e.enqueued = now
	r, _ := p.runStep(s, h, now, false)
	if r.finished() {
		// Never adopted: nothing to file (fileLocked would recycle it).
		p.recycle(h)
		p.returnSlot(w)
		return h, nil
	}
	p.mu.Lock()
	h.adopted = true
	p.running++
	p.q.Ran(&h.e, r.start)
	p.fileLentLocked(w, h, &r)
	return h, nil
}

// fileLentLocked files a step a caller ran in w's lent slot (fileLocked),
// under p.mu, which it releases; ends the task if it must stop; and gives
// the slot back.
func (p *Pool) fileLentLocked(w *worker, h *Handle, r *stepResult) {
	wk, stop := p.fileLocked(h, r, true)
	if wk == nil && p.syncQueuedLocked(r.end) > 0 {
		// The step's Done made work ready (a cooled slot freed: see
		// cooled.go), and no worker is about to pop after it, as one would
		// after its own step.
		wk = p.slots.unparkOneLocked()
	}
	p.mu.Unlock()
	signal(wk)
	if stop != nil {
		// Close waits for this slot (giveBack below), so for this Done too.
		p.end(h, stop, &w.lent.stats.completed)
	}
	p.returnSlot(w)
}

// accept counts h among the pool's live tasks: in the invariants' count,
// and among the live tasks that are not point reads (see Pool.work).
func (p *Pool) accept(h *Handle) {
	p.inv.accept()
	if !h.short {
		p.longLive.Add(1)
	}
}

// entry is the entry of a task spawned with o, before the pool owns it.
func (o *SpawnOptions) entry() Entry {
	return Entry{TaskID: o.TaskID, Fixed: o.Fixed, FixedLevel: o.Level, Group: o.Group, Priority: o.Priority, Short: o.Short,
		Tag: o.Tag, Demoted: o.Demoted, Origin: o.Origin, Governed: o.Governed, maxWait: o.MaxQueueWait}
}

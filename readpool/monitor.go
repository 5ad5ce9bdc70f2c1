package readpool

import "time"

// The monitor notices workers stuck in one step (a user callback, a huge
// value) and lets temporary extra workers run the other ready tasks until
// the step returns — as Go's runtime hands a P off from a thread blocked in
// a system call. It sleeps while no step runs, so an idle pool burns no CPU.

func (p *Pool) pokeMonitor() {
	if p.monitorParked.Load() && p.monitorParked.CompareAndSwap(true, false) {
		select {
		case p.monitorWake <- struct{}{}:
		default:
		}
	}
}

func (p *Pool) monitor() {
	defer p.wg.Done()
	period := max(p.opts.LongStep/4, 100*time.Microsecond)
	t := time.NewTimer(period)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
		}
		if !p.checkLongSteps() {
			// Publish that we sleep, then look again: a step that started
			// before the flag was set is seen now, one after it pokes us.
			p.monitorParked.Store(true)
			if !p.anyRunning() {
				select {
				case <-p.quit:
					return
				case <-p.monitorWake:
				}
			}
			p.monitorParked.Store(false)
		}
		t.Reset(period)
	}
}

func (p *Pool) anyRunning() bool {
	for _, w := range p.slots.workers {
		if w.own.stepStart.Load() != 0 || w.lent.stepStart.Load() != 0 {
			return true
		}
	}
	return false
}

// checkLongSteps flags steps that have run longer than LongStep, clears
// stale flags, and starts extra workers as needed. It reports whether any
// step is running.
func (p *Pool) checkLongSteps() bool {
	now := p.now()
	running := false
	for _, w := range p.slots.workers {
		running = p.checkSlot(&w.own, now) || running
		running = p.checkSlot(&w.lent, now) || running
	}
	if stuck := p.stuck.Load(); stuck > 0 {
		p.mu.Lock()
		for int64(p.extras) < min(stuck, int64(len(p.slots.workers))) && !p.closed && p.q.Len() > 0 {
			p.extras++
			w := &worker{wake: make(chan struct{}, 1), extra: true}
			if p.extraWorkers == nil {
				p.extraWorkers = map[*worker]struct{}{}
			}
			p.extraWorkers[w] = struct{}{}
			p.wg.Add(1)
			go p.work(w)
		}
		p.mu.Unlock()
	}
	return running
}

// checkSlot flags s's step if it has run longer than LongStep and clears a
// stale flag; it reports whether a step is running there.
func (p *Pool) checkSlot(s *slot, now time.Duration) bool {
	start := s.stepStart.Load()
	if v := s.longFor.Load(); v != 0 && v != start && s.longFor.CompareAndSwap(v, 0) {
		p.stuck.Add(-1) // flagged a step that has since ended
	}
	if start == 0 {
		return false
	}
	if now-time.Duration(start-1) < p.opts.LongStep || s.longFor.Load() == start {
		return true
	}
	p.stuck.Add(1)
	if !s.longFor.CompareAndSwap(0, start) {
		p.stuck.Add(-1)
		return true
	}
	if s.stepStart.Load() != start {
		// It ended meanwhile; its goroutine may have missed the flag.
		if s.longFor.CompareAndSwap(start, 0) {
			p.stuck.Add(-1)
		}
		return true
	}
	p.longSteps.Add(1)
	return true
}

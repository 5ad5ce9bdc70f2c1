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
	for _, w := range p.workers {
		if w.stepStart.Load() != 0 {
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
	for _, w := range p.workers {
		s := w.stepStart.Load()
		if v := w.longFor.Load(); v != 0 && v != s && w.longFor.CompareAndSwap(v, 0) {
			p.stuck.Add(-1) // flagged a step that has since ended
		}
		if s == 0 {
			continue
		}
		running = true
		if now-time.Duration(s-1) < p.opts.LongStep || w.longFor.Load() == s {
			continue
		}
		p.stuck.Add(1)
		if !w.longFor.CompareAndSwap(0, s) {
			p.stuck.Add(-1)
			continue
		}
		if w.stepStart.Load() != s {
			// It ended meanwhile; the worker may have missed the flag.
			if w.longFor.CompareAndSwap(s, 0) {
				p.stuck.Add(-1)
			}
			continue
		}
		p.longSteps.Add(1)
	}
	if stuck := p.stuck.Load(); stuck > 0 {
		p.mu.Lock()
		for int64(p.extras) < min(stuck, int64(len(p.workers))) && !p.closed && p.q.Len() > 0 {
			p.extras++
			w := &worker{wake: make(chan struct{}, 1), extra: true}
			p.wg.Add(1)
			go p.work(w)
		}
		p.mu.Unlock()
	}
	return running
}

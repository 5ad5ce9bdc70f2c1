package readpool

// Spare workers: urgent work (the MLFQ's point reads that have not run yet)
// must not wait for a worker's round trip through Go's global run queue.
//
// A worker that completes a Get readies the Get's caller on its own P and
// hands that P over (runtime.Gosched), which puts the worker itself on Go's
// global run queue; a busy P looks there only every 61st schedule, or when
// its own queue is empty. With every other worker in a scan step, a Get
// queued meanwhile waited for one of them to come back: measured beside 8
// scans on 2 CPUs, that wait was the Get's service p99 (~0.5 ms, of which
// the step itself was ~0.1 ms).
//
// A spare is a worker beyond Workers that sleeps until urgent work finds
// every worker busy while scans are live (a closed loop of Gets alone is
// served better by the workers, see wakeSpareLocked). The spawner that
// queues it then wakes a sleeping spare; a goroutine readied so goes to the
// spawner's P as its next to run, and the spawner, a Get's caller, blocks
// on its result at once, so the spare steps the Get without any trip
// through the global queue. A spare
// steps only what the queue's PopUrgent gives, so the pool runs at most
// Workers steps of other work at once as before; and it never hands its P
// over between steps: it sleeps when urgent work runs out, and sleeping
// gives the P to the callers it readied.
//
// The protocol, under Pool.mu: a spare is on spares.parked exactly while
// it sleeps or is about to; whoever takes it off the list sends it one
// wake-up token (w.wake, capacity 1), as for workers (slots.go).

// spares are the spare workers and which of them sleep: slots' shape,
// without the lending (a spare's slot is never lent).
type spares struct {
	workers []*worker // fixed when the pool starts
	parked  []*worker // under Pool.mu: asleep or about to be, LIFO
}

// parkLocked puts the spare w on the list before it sleeps.
func (ss *spares) parkLocked(w *worker) {
	w.parked = true
	ss.parked = append(ss.parked, w)
}

// unparkOneLocked takes the most recently parked spare off the list, for
// the caller to signal after unlocking; nil if none.
func (ss *spares) unparkOneLocked() *worker {
	n := len(ss.parked)
	if n == 0 {
		return nil
	}
	w := ss.parked[n-1]
	ss.parked = ss.parked[:n-1]
	w.parked = false
	return w
}

// unparkAllLocked takes every sleeping spare off the list, for Close to
// signal: each sees the pool closed and exits.
func (ss *spares) unparkAllLocked() []*worker {
	ws := ss.parked
	ss.parked = nil
	for _, w := range ws {
		w.parked = false
	}
	return ws
}

// startSpares starts the spare workers, if the queue can pop urgent work
// alone.
func (p *Pool) startSpares() {
	up, ok := p.opts.Queue.(UrgentPopper)
	if !ok {
		return
	}
	p.urgent = up
	for range max(p.opts.Spares, 0) {
		w := &worker{wake: make(chan struct{}, 1)}
		p.spares.workers = append(p.spares.workers, w)
		p.wg.Add(1)
		go p.workSpare(w)
	}
}

// wakeSpareLocked takes a sleeping spare off the list when urgent work is
// queued while scans or coprocessor requests are live, for the caller to
// signal after unlocking; nil if none.
//
// With only point reads live the workers serve them best themselves: a
// worker steps the Gets queued behind the one it finished before it hands
// its P over (handoffDelay), one hand-off for several callers, where a
// spare costs two goroutine switches a Get. Measured in a closed loop
// (ycsb runner, workloads b and c, coopkv-mlfq, two rounds): a spare woken
// for every queued Get cost C 11.1–11.6 → 12.6–16.7 µs CPU/op and 170–178 k
// → 110–163 k ops/s.
func (p *Pool) wakeSpareLocked() *worker {
	if len(p.spares.parked) == 0 || p.longLive.Load() == 0 || p.urgent.Urgent() == 0 {
		return nil
	}
	return p.spares.unparkOneLocked()
}

// spareRun bounds how long a spare steps urgent work back to back before it
// sleeps and lets its P go to the callers it readied: a few Gets' steps.
// The next urgent spawn that finds every worker busy wakes it again.
const spareRun = defaultHandoffDelay

// workSpare is a spare's loop: pop urgent work, step it, sleep when there
// is none (or after spareRun of stepping).
func (p *Pool) workSpare(w *worker) {
	defer p.wg.Done()
	s := &w.own
	var last filedStep // the step to file at the next lock
	now := p.now()
	awake := now // when it last woke
	for {
		p.mu.Lock()
		if h := last.h; h != nil {
			last.h = nil
			// A task it stepped that goes on is queued for whoever is free:
			// it may have left level 0, and a parked worker must hear of it.
			if wk, stop := p.fileLocked(h, &last.r, true); wk != nil || stop != nil {
				p.mu.Unlock()
				signal(wk)
				if stop != nil {
					p.end(h, stop, &s.stats.completed)
				}
				p.mu.Lock()
			}
		}
		if invariants {
			p.checkLocked()
		}
		if p.closed {
			// Close drained the queue and took us off the list.
			p.mu.Unlock()
			return
		}
		var h *Handle
		var stop error
		if now-awake < spareRun {
			h, stop = p.takeLocked(p.urgent.PopUrgent(now), now)
		}
		if stop != nil {
			p.mu.Unlock()
			p.end(h, stop, &s.stats.completed)
			now = p.now()
			continue
		}
		if h == nil {
			p.spares.parkLocked(w)
			p.mu.Unlock()
			<-w.wake
			now = p.now()
			awake = now
			continue
		}
		p.mu.Unlock()
		last.h = h
		last.r, _ = p.runStep(s, h, now, true)
		now = last.r.end
	}
}

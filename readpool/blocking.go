package readpool

// Steps blocked off the CPU. Workers bound the steps running on the CPU,
// not the reads in flight: on a disk of 200 µs to 1 ms a read, with data
// larger than the block cache, a step spends most of its life in a pread,
// and counted as running it holds its worker. The pool then served a tenth
// of the Gets a goroutine per request did (issue 29: 1.8 k against 19.7 k
// Gets/s at 1 ms, 2 workers, 32 clients).
//
// So whoever runs a step tells the pool when it is about to block in a
// system call and when it is back (EnterBlocking, ExitBlocking: kv's
// filesystem does, around every table read on a slow disk), and the pool
// lets one more extra worker run the queued tasks per blocked read — as Go's
// runtime hands a P off from a thread blocked in a system call, and as the
// monitor does for a step stuck on the CPU. When the read returns, its step
// finishes its slice, and the extras beyond the rule's count go idle at
// their next step boundary: the pool settles back to Workers on the CPU.
// The queue still decides who runs next; only how many may wait at once
// changes, up to MaxWorkers goroutines stepping in all.
//
// The pool is told of reads, not of steps: it cannot tell a step's read
// from a compaction's on another goroutine (Go has no goroutine identity,
// and Pebble does not pass a context down to its files). A background read
// that blocks while the pool is busy lets one step more run meanwhile; a
// compaction waiting on the disk is not on the CPU either.
//
// The count's protocol: blocked is raised before the read and lowered
// after it (sequentially consistent atomics). A pusher stores queued, then
// loads blocked (pushLocked → extraLocked); EnterBlocking adds to blocked,
// then loads queued. So a task queued while a step blocks is seen by one of
// the two, and one of them readies an extra worker for it (both may: the
// rule, applied under Pool.mu, bounds the count).

// EnterBlocking tells the pool that the calling goroutine, which may be
// running one of its steps, is about to block off the CPU (a read from a
// slow disk). While it is blocked, the pool may run one more step beside
// its Workers, up to MaxWorkers. Every EnterBlocking must be followed by
// one ExitBlocking on the same goroutine. Safe from any goroutine, before
// and after Close.
func (p *Pool) EnterBlocking() {
	p.blocked.Add(1)
	if p.queued.Load() == 0 {
		return // nothing waits for a worker: nobody to ready
	}
	p.mu.Lock()
	var w *worker
	if !p.closed && p.q.Len() > 0 {
		if w = p.slots.unparkOneLocked(); w == nil {
			w = p.extraLocked()
		}
	}
	p.mu.Unlock()
	signal(w)
}

// ExitBlocking tells the pool that a goroutine that called EnterBlocking is
// back on the CPU.
func (p *Pool) ExitBlocking() {
	if n := p.blocked.Add(-1); invariants && n < 0 {
		panic("readpool: invariant: ExitBlocking without EnterBlocking")
	}
}

// extraRule is how many extra workers may step beside the pool's workers:
// one per step stuck on the CPU (at most one per worker, see monitor.go)
// and one per read blocked off it, within MaxWorkers. A pure rule: the
// counts are passed in.
type extraRule struct {
	workers   int // Options.Workers
	maxExtras int // MaxWorkers − Workers − the spares, ≥ 0
}

// newExtraRule is the rule of a pool of o's Workers and MaxWorkers with
// spares spare workers.
func newExtraRule(o *Options, spares int) extraRule {
	return extraRule{workers: o.Workers, maxExtras: max(0, o.MaxWorkers-o.Workers-spares)}
}

// allowed is how many extras may run with stuck steps stuck and blocked
// reads blocked.
func (r extraRule) allowed(stuck, blocked int64) int {
	n := min(stuck, int64(r.workers)) + max(blocked, 0)
	return int(min(n, int64(r.maxExtras)))
}

// toStart is how many extras to ready beside the extras running, while
// tasks are ready (or not).
func (r extraRule) toStart(extras int, stuck, blocked int64, ready bool) int {
	if !ready {
		return 0
	}
	return max(0, r.allowed(stuck, blocked)-extras)
}

// tooMany reports whether, with extras running, one should go idle.
func (r extraRule) tooMany(extras int, stuck, blocked int64) bool {
	return extras > r.allowed(stuck, blocked)
}

// extraLocked readies one more extra worker if the rule allows one, under
// p.mu: an idle extra, returned for the caller to signal after unlocking,
// or a new one, started here (nil is returned then, and when none is
// allowed).
func (p *Pool) extraLocked() *worker {
	if p.closed || p.rule.toStart(p.extras, p.mon.stuck.Load(), p.blocked.Load(), true) == 0 {
		return nil
	}
	p.extras++
	if n := len(p.extraIdle); n > 0 {
		w := p.extraIdle[n-1]
		p.extraIdle = p.extraIdle[:n-1]
		w.parked = false
		return w
	}
	w := &worker{wake: make(chan struct{}, 1), extra: true}
	if p.extraWorkers == nil {
		p.extraWorkers = map[*worker]struct{}{}
	}
	p.extraWorkers[w] = struct{}{}
	p.wg.Add(1)
	go p.work(w)
	return nil
}

// extraTooManyLocked reports whether the extra worker w, between steps,
// should go idle (or, after Close, exit).
func (p *Pool) extraTooManyLocked() bool {
	return p.closed || p.rule.tooMany(p.extras, p.mon.stuck.Load(), p.blocked.Load())
}

// idleExtraLocked puts the extra worker w, which has nothing to do or is
// one too many, on the idle list under p.mu, which it releases, and sleeps
// until extraLocked or Close readies it again. Work left in the queue goes
// to a parked worker. After Close it retires w instead and reports false:
// w's loop must end.
func (p *Pool) idleExtraLocked(w *worker) bool {
	if p.closed {
		p.retireLocked(w)
		return false
	}
	p.extras--
	w.parked = true
	p.extraIdle = append(p.extraIdle, w)
	var wk *worker
	if p.q.Len() > 0 {
		wk = p.slots.unparkOneLocked()
	}
	p.mu.Unlock()
	signal(wk)
	<-w.wake
	return true
}

// wakeIdleExtrasForCloseLocked takes every idle extra off the list, counted
// as running again, so that each sees the pool closed and exits.
func (p *Pool) wakeIdleExtrasForCloseLocked() []*worker {
	ws := p.extraIdle
	p.extraIdle = nil
	for _, w := range ws {
		w.parked = false
		p.extras++
	}
	return ws
}

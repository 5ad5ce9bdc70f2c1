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

// readsBlocked is the pool's one signal that the disk is slow: a read is
// blocked off the CPU now. Whether a disk is slow is the caller's judgement
// (kv tells the pool only of reads on a disk whose recent reads were slow:
// kv/diskreads.go); the pool acts on the reads it is told of — extra
// workers, no batches, units cut at the slice (StepContext.Overdue) — and
// the CPU controller sizes its slack only while there are some (cpu.go).
func (p *Pool) readsBlocked() bool { return p.blocked.Load() > 0 }

// ExitBlocking tells the pool that a goroutine that called EnterBlocking is
// back on the CPU.
func (p *Pool) ExitBlocking() {
	if n := p.blocked.Add(-1); invariants && n < 0 {
		panic("readpool: invariant: ExitBlocking without EnterBlocking")
	}
}

// extraRule is how many extra workers may step beside the pool's workers:
// one per step stuck on the CPU (at most one per worker, see monitor.go),
// and, while reads are blocked off it, one per blocked read and the CPU
// controller's slack (cpu.go) — all within MaxWorkers. A pure rule: the
// counts are passed in.
type extraRule struct {
	workers   int // Options.Workers
	maxExtras int // MaxWorkers − Workers − the spares, ≥ 0
}

// extraDemand is what the rule counts: steps stuck on the CPU, reads
// blocked off it, and the controller's slack.
type extraDemand struct {
	stuck, blocked, slack int64
}

// newExtraRule is the rule of a pool of o's Workers and MaxWorkers with
// spares spare workers.
func newExtraRule(o *Options, spares int) extraRule {
	return extraRule{workers: o.Workers, maxExtras: max(0, o.MaxWorkers-o.Workers-spares)}
}

// allowed is how many extras may run for demand d. The slack counts only
// while a read is blocked: with none, Workers bounds the steps exactly.
func (r extraRule) allowed(d extraDemand) int {
	n := min(d.stuck, int64(r.workers))
	if d.blocked > 0 {
		n += d.blocked + max(d.slack, 0)
	}
	return int(min(n, int64(r.maxExtras)))
}

// toStart is how many extras to ready beside the extras running, while
// tasks are ready (or not).
func (r extraRule) toStart(extras int, d extraDemand, ready bool) int {
	if !ready {
		return 0
	}
	return max(0, r.allowed(d)-extras)
}

// tooMany reports whether, with extras running, one should go idle.
func (r extraRule) tooMany(extras int, d extraDemand) bool {
	return extras > r.allowed(d)
}

// demand is the pool's extraDemand now.
func (p *Pool) demand() extraDemand {
	return extraDemand{stuck: p.mon.stuck.Load(), blocked: p.blocked.Load(), slack: p.slack.Load()}
}

// extraLocked readies one more extra worker if the rule allows one, under
// p.mu: an idle extra, returned for the caller to signal after unlocking,
// or one whose goroutine it starts here (nil is returned then, and when
// none is allowed).
func (p *Pool) extraLocked() *worker {
	if p.closed {
		return nil
	}
	w := p.extras.take(p.demand())
	if w == nil {
		return nil
	}
	if !w.started {
		w.started = true
		p.wg.Add(1)
		go p.work(w)
		return nil
	}
	return w
}

// borrowExtra lends a caller the slot of an extra worker (its lent slot),
// for a first step inline, if the rule allows one extra more: while reads
// block, a Get's caller runs it on its own goroutine, as a goroutine per
// request would, rather than wake an extra and wait to be woken by it —
// two goroutine switches, each of which may wait ~20 µs for a P that a
// thread blocked in a read holds. Nil when none is allowed. Close waits
// for the slot's return (Pool.ending).
func (p *Pool) borrowExtra() *worker {
	p.mu.Lock()
	defer p.mu.Unlock()
	var w *worker
	if !p.closed {
		w = p.extras.take(p.demand())
	}
	if w == nil {
		p.refused.Store(true) // a read waits for want of a slot: the controller hears of it
		return nil
	}
	p.ending.Add(1)
	w.borrowed = true
	return w
}

// giveBackExtra returns an extra's slot a caller borrowed: the extra goes
// back on the idle list, and if tasks wait and the rule allows, an extra is
// readied for them. After Close the extra's goroutine (if it has one) is
// woken to exit, or the extra retired here.
func (p *Pool) giveBackExtra(w *worker) {
	p.mu.Lock()
	w.borrowed = false
	var wk *worker
	switch {
	case p.closed && w.started:
		wk = w // it was asleep off the list, counted: it sees Close and exits
	case p.closed:
		p.retireStatsLocked(w, true)
	default:
		p.extras.park(w)
		if p.q.Len() > 0 {
			wk = p.extraLocked()
		}
	}
	p.mu.Unlock()
	signal(wk)
	p.ending.Done()
}

// returnSlot gives back the slot of w that a caller borrowed for a step
// inline: a parked worker's, or an extra's.
func (p *Pool) returnSlot(w *worker) {
	if w.borrowed {
		p.giveBackExtra(w)
		return
	}
	p.giveBack(w)
}

// extraTooManyLocked reports whether the extra worker w, between steps,
// should go idle (or, after Close, exit).
func (p *Pool) extraTooManyLocked() bool {
	return p.closed || p.extras.tooMany(p.demand())
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
	p.extras.park(w)
	var wk *worker
	if p.q.Len() > 0 {
		wk = p.slots.unparkOneLocked()
	}
	p.mu.Unlock()
	signal(wk)
	<-w.wake
	return true
}

// wakeIdleExtrasForCloseLocked takes every idle extra off the list: those
// with a goroutine are returned, to be woken so that each sees the pool
// closed and exits; the others are retired here.
func (p *Pool) wakeIdleExtrasForCloseLocked() []*worker {
	started, never := p.extras.closing()
	for _, w := range never {
		p.retireStatsLocked(w, false)
	}
	return started
}

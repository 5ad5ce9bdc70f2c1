package readpool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/readpool/internal/hist"
)

// Options configures a Pool. The zero value is valid: every zero field takes
// its documented default.
type Options struct {
	// Workers is the number of pool workers; 0 = runtime.GOMAXPROCS(0).
	Workers int
	// MaxTasks is how many tasks may be queued or running before Spawn
	// fails with ErrBusy; 0 = Workers × 2000 (TiKV's default per worker).
	// Pending tasks do not count (tikv #18491).
	MaxTasks int
	// TimeSlice is the wall time a step may run before ShouldYield says
	// yield; 0 = 1 ms.
	TimeSlice time.Duration
	// Budget is the number of units (ShouldYield calls) a step may do;
	// 0 = 128 (Tokio's task budget).
	Budget int
	// LongStep is how long a step may run before the pool treats its worker
	// as stuck and lets a temporary extra worker run other tasks;
	// 0 = 20 × TimeSlice.
	LongStep time.Duration
	// Queue is the scheduling policy; nil = NewMLFQ(MLFQOptions{}). A queue
	// holds state: give each pool its own.
	Queue Queue
	// Accountant, when set, is charged after every step (resource control).
	Accountant Accountant

	// goschedEvery is how much step time a worker runs before it hands its
	// P back to the Go scheduler; 0 = TimeSlice / 4.
	goschedEvery time.Duration
}

// Accountant is told what each step consumed. Resource control implements
// it to advance its groups' virtual time; it is called outside the pool's
// locks, from the goroutine that ran the step.
type Accountant interface {
	Charge(group string, u Usage)
}

// Usage is what one step consumed.
type Usage struct {
	Exec  time.Duration
	Rows  int64
	Bytes int64
}

// EnsureDefaults fills every zero field but Queue with its default (New
// gives a nil Queue a fresh MLFQ of its own).
func (o *Options) EnsureDefaults() {
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.MaxTasks == 0 {
		o.MaxTasks = o.Workers * 2000
	}
	if o.TimeSlice == 0 {
		o.TimeSlice = time.Millisecond
	}
	if o.Budget == 0 {
		o.Budget = 128
	}
	if o.LongStep == 0 {
		o.LongStep = 20 * o.TimeSlice
	}
	if o.goschedEvery == 0 {
		o.goschedEvery = o.TimeSlice / 4
	}
}

// Validate reports every problem with the options at once; New calls it.
func (o *Options) Validate() error {
	var errs []error
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("readpool: Workers %d is negative", o.Workers))
	}
	if o.MaxTasks < 0 {
		errs = append(errs, fmt.Errorf("readpool: MaxTasks %d is negative", o.MaxTasks))
	}
	if o.TimeSlice < 0 {
		errs = append(errs, fmt.Errorf("readpool: TimeSlice %v is negative", o.TimeSlice))
	}
	if o.Budget < 0 {
		errs = append(errs, fmt.Errorf("readpool: Budget %d is negative", o.Budget))
	}
	if o.LongStep < 0 {
		errs = append(errs, fmt.Errorf("readpool: LongStep %v is negative", o.LongStep))
	}
	return errors.Join(errs...)
}

// SpawnOptions are a task's scheduling extras.
type SpawnOptions struct {
	// TaskID is the MLFQ identity: the time of all tasks with one id adds
	// up, so a job split into many small reads is still seen as big. 0 =
	// the task is its own identity.
	TaskID uint64
	// Fixed pins the task to Level (0 = highest) whatever its elapsed time:
	// high-priority work on 0, background work on the last level.
	Fixed bool
	Level int
	// Group is the resource group charged for the task's steps.
	Group string
	// Priority is the value a priority queue orders by (lower first) when
	// it has no PriorityFunc of its own.
	Priority uint64
	// Inline lets Spawn run the first step on the caller's goroutine when a
	// worker is idle and nothing is queued: no hand-off, nobody overtaken,
	// and still at most Workers steps at once. Use it for requests whose
	// caller waits for the result anyway (a Get); not where Spawn must
	// return at once (a Scan).
	Inline bool
}

// Pool is a bounded pool of workers that step tasks chosen by its Queue.
type Pool struct {
	mu sync.Mutex
	// queued mirrors q.Len() for lock-free readers (the inline fast path,
	// spinning workers). It sits beside mu: it changes only under mu, so
	// it rides the cache line the lock already brought.
	queued atomic.Int64
	// urgent counts the queued entries on level 0, for ShouldYield: a step
	// of a lower level yields at its next unit when one is waiting.
	urgent atomic.Int64

	// Under mu.
	q           Queue
	closed      bool
	parked      []*worker // idle workers, LIFO (warm first); their slots may be lent
	idleHead    Handle    // sentinel of the list of Pending tasks
	idleN       int
	extras      int
	spawned     int64 // accepted tasks, but for those run inline (counted per slot)
	active      int64 // queued + running tasks, against MaxTasks
	live        int64 // accepted tasks whose Done has not returned (see Handle.tracked)
	drainedDone bool
	retired     workerStats

	opts  Options
	epoch time.Time
	// goschedEvery is copied out of opts for the ShouldYield fast path.
	goschedEvery time.Duration

	closedFlag atomic.Bool  // mirrors closed for lock-free fast paths
	completed  atomic.Int64 // tasks ended off the workers' step path
	rejected   atomic.Int64
	cancelled  atomic.Int64
	dropped    atomic.Int64
	panicked   atomic.Int64
	wakes      atomic.Int64
	longSteps  atomic.Int64
	preempted  atomic.Int64 // steps cut short for level-0 work
	stuck      atomic.Int64 // steps running longer than LongStep

	workers       []*worker
	wg            sync.WaitGroup // workers, extra workers, monitor
	quit          chan struct{}
	monitorParked atomic.Bool
	monitorWake   chan struct{}
	drained       chan struct{} // closed when live reaches 0 after Close
	closeDone     chan struct{}
}

// slot is where a step runs: the StepContext, Gosched clock and counters of
// whoever holds it. stepStart is the pool time the current step began, +1
// (0 = idle), read by the monitor. longFor is the stepStart of a step the
// monitor found stuck (0 = none): every successful set of it is matched by
// one successful clear, Pool.stuck is raised before the set and lowered
// after the clear, so stuck counts flagged steps and never goes below 0.
type slot struct {
	sc          StepContext
	lastGosched time.Duration
	stepStart   atomic.Int64
	longFor     atomic.Int64
	stats       workerStats
	_           [64]byte // keep slots of different goroutines off one cache line
}

// Lend states of a worker's execution slot.
const (
	lendAwake uint32 = iota // the worker runs, or is about to
	lendFree                // the worker is idle; a caller may borrow its slot
	lendLent                // the worker is idle and a caller runs a step in its place
)

// worker is one pool goroutine. While it is idle its slot may be lent to a
// caller that runs a first step inline (a CAS on lend, no lock), so there
// are never more than Workers steps at once; the borrower then uses the
// worker's second slot, lent, whose counters are the borrower's alone.
type worker struct {
	own    slot
	lent   slot
	lend   atomic.Uint32
	wake   chan struct{} // capacity 1: whoever moves lend to lendAwake sends once
	extra  bool
	parked bool // in Pool.parked; under Pool.mu
}

type workerStats struct {
	steps, yields, pendings atomic.Int64
	inline                  atomic.Int64 // first steps run inline on this slot
	completed               atomic.Int64 // tasks ended by a step on this slot
	wait, step              hist.Histogram
}

func (s *workerStats) add(o *workerStats) {
	s.steps.Add(o.steps.Load())
	s.yields.Add(o.yields.Load())
	s.pendings.Add(o.pendings.Load())
	s.inline.Add(o.inline.Load())
	s.completed.Add(o.completed.Load())
	s.wait.Merge(&o.wait)
	s.step.Merge(&o.step)
}

// New starts a pool.
func New(opts Options) (*Pool, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.EnsureDefaults()
	if opts.Queue == nil {
		opts.Queue = NewMLFQ(MLFQOptions{})
	}
	p := &Pool{
		opts:         opts,
		epoch:        time.Now(),
		goschedEvery: opts.goschedEvery,
		q:            opts.Queue,
		quit:         make(chan struct{}),
		monitorWake:  make(chan struct{}, 1),
		drained:      make(chan struct{}),
		closeDone:    make(chan struct{}),
	}
	p.idleHead.idleNext, p.idleHead.idlePrev = &p.idleHead, &p.idleHead
	p.workers = make([]*worker, opts.Workers)
	for i := range p.workers {
		w := &worker{wake: make(chan struct{}, 1)}
		p.workers[i] = w
		p.wg.Add(1)
		go p.work(w)
	}
	p.wg.Add(1)
	go p.monitor()
	return p, nil
}

// Options returns the options in force, defaults filled in.
func (p *Pool) Options() Options { return p.opts }

// now is the pool's monotonic clock: time.Since of a monotonic reading costs
// one clock read, not the two of time.Now.
func (p *Pool) now() time.Duration { return time.Since(p.epoch) }

// Spawn hands t to the pool. It fails at once with ErrBusy when MaxTasks
// tasks are queued or running and with ErrClosed after Close; then t is not
// started and its Done is not called. Otherwise Done will be called exactly
// once — at once, on this goroutine, when ctx is already done.
func (p *Pool) Spawn(ctx context.Context, t Task, o SpawnOptions) (*Handle, error) {
	return p.spawn(ctx, t, o, false)
}

// Go is Spawn for a task nobody needs a handle to — a Get, whose caller
// waits for the task's Done. Its handle is recycled when the task ends,
// unless the task took it (StepContext.Handle), e.g. to be woken.
func (p *Pool) Go(ctx context.Context, t Task, o SpawnOptions) error {
	_, err := p.spawn(ctx, t, o, true)
	return err
}

var handlePool = sync.Pool{New: func() any { return new(Handle) }}

func (p *Pool) spawn(ctx context.Context, t Task, o SpawnOptions, recycle bool) (*Handle, error) {
	if p.closedFlag.Load() {
		return nil, ErrClosed
	}
	if o.Inline && o.TaskID == 0 && p.queued.Load() == 0 {
		if w := p.borrow(); w != nil {
			return p.spawnInline(ctx, t, o, w, recycle)
		}
	}
	h := p.newHandle(ctx, t, o, recycle)
	h.tracked = true
	now := p.now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.release(h)
		return nil, ErrClosed
	}
	if p.active >= int64(p.opts.MaxTasks) {
		p.mu.Unlock()
		p.rejected.Add(1)
		p.release(h)
		return nil, ErrBusy
	}
	p.active++
	p.live++
	p.spawned++
	if err := ctx.Err(); err != nil {
		p.mu.Unlock()
		h.state.Store(stateCompleted)
		p.finish(h, err, true)
		return h, nil
	}
	h.state.Store(stateNotified)
	w := p.pushLocked(h, now)
	p.mu.Unlock()
	wake(w)
	return h, nil
}

func (p *Pool) newHandle(ctx context.Context, t Task, o SpawnOptions, recycle bool) *Handle {
	var h *Handle
	if recycle {
		h = handlePool.Get().(*Handle)
	} else {
		h = new(Handle)
	}
	h.p, h.t, h.ctx, h.recycle = p, t, ctx, recycle
	h.e = Entry{TaskID: o.TaskID, Fixed: o.Fixed, FixedLevel: o.Level, Group: o.Group, Priority: o.Priority, h: h}
	return h
}

// release recycles h once its task has ended, if nobody else can hold it:
// it came from Go and the task never took it. The last use of h by the
// pool must come before.
func (p *Pool) release(h *Handle) {
	if !h.recycle || h.escaped {
		return
	}
	*h = Handle{}
	handlePool.Put(h)
}

// spawnInline runs t's first step on the caller's goroutine in w's slot.
// A task that finishes in that step touches no shared lock or counter (the
// queue does not see it either: it overtook nobody and took no time from
// anyone waiting); one that yields or waits is adopted by the pool.
func (p *Pool) spawnInline(ctx context.Context, t Task, o SpawnOptions, w *worker, recycle bool) (*Handle, error) {
	if p.closedFlag.Load() { // Close may have missed our borrow: see giveBack
		p.giveBack(w)
		return nil, ErrClosed
	}
	h := p.newHandle(ctx, t, o, recycle)
	s := &w.lent
	s.stats.inline.Add(1)
	if err := ctx.Err(); err != nil {
		h.state.Store(stateCompleted)
		p.finish(h, err, false)
		p.giveBack(w)
		return h, nil
	}
	h.state.Store(statePolling)
	now := p.now()
	h.e.enqueued = now
	var st settlement
	p.step(s, h, now, false, &st)
	p.giveBack(w) // st is empty: an inline step leaves nothing to settle
	return h, nil
}

// borrow lends the caller the slot of an idle worker, or returns nil.
func (p *Pool) borrow() *worker {
	n := len(p.workers)
	start := int(rand.Uint32() % uint32(n)) // per-thread state: cheap, no lock
	for i := range n {
		w := p.workers[(start+i)%n]
		if w.lend.Load() == lendFree && w.lend.CompareAndSwap(lendFree, lendLent) {
			return w
		}
	}
	return nil
}

// giveBack returns a borrowed slot. If work was queued meanwhile (a pusher
// found the slot lent and woke nobody) or the pool is closing, the worker is
// woken to take it. The store of lendFree before the load of queued here,
// and the pusher's add to queued before its CAS of lend, make sure that one
// of the two sees the other.
func (p *Pool) giveBack(w *worker) {
	w.lend.Store(lendFree)
	if p.queued.Load() == 0 && !p.closedFlag.Load() {
		return
	}
	p.mu.Lock()
	if w.parked && w.lend.CompareAndSwap(lendFree, lendAwake) {
		p.unparkLocked(w)
	}
	p.mu.Unlock()
}

// pushLocked queues a NOTIFIED task and picks an idle worker whose slot is
// not lent to run it; the caller wakes that worker (wake) after unlocking,
// so that the goroutine hand-off is not made under the lock.
func (p *Pool) pushLocked(h *Handle, now time.Duration) *worker {
	h.e.enqueued = now
	p.q.Push(&h.e, now)
	p.queued.Add(1)
	if h.e.Level == 0 {
		p.urgent.Add(1)
	}
	for i := len(p.parked) - 1; i >= 0; i-- {
		if w := p.parked[i]; w.lend.CompareAndSwap(lendFree, lendAwake) {
			p.removeParkedLocked(w)
			return w
		}
	}
	return nil
}

// wake sends w, taken off the idle list by pushLocked, its wake-up token.
func wake(w *worker) {
	if w != nil {
		w.wake <- struct{}{}
	}
}

// unparkLocked takes w, which the caller has moved to lendAwake, off the
// idle list and wakes it.
func (p *Pool) unparkLocked(w *worker) {
	p.removeParkedLocked(w)
	w.wake <- struct{}{}
}

func (p *Pool) removeParkedLocked(w *worker) {
	for i, pw := range p.parked {
		if pw == w {
			p.parked = append(p.parked[:i], p.parked[i+1:]...)
			break
		}
	}
	w.parked = false
}

// settlement is the bookkeeping of a step that completed its task on a
// worker. The worker applies it under the lock it takes anyway for its next
// pop, so a task costs each side one lock acquisition.
type settlement struct {
	e            *Entry
	elapsed, now time.Duration
}

func (p *Pool) settleLocked(st *settlement) {
	if st.e == nil {
		return
	}
	p.q.Done(st.e, st.elapsed, st.now)
	p.active--
	p.liveDoneLocked()
	p.release(st.e.h)
	*st = settlement{}
}

// spinBeforePark is how many times an idle worker yields its P, watching
// the queue, before it sleeps. A task spawned meanwhile costs no futex
// sleep and wake-up; the worker's slot stays lendable while it spins.
const spinBeforePark = 4

// work is a worker's loop: pop, step, cooperate with Go's scheduler, idle
// when there is nothing to do. An extra worker exits instead of idling, and
// as soon as there are more extras than stuck steps.
func (p *Pool) work(w *worker) {
	defer p.wg.Done()
	s := &w.own
	s.lastGosched = p.now()
	var st settlement
	now := s.lastGosched
	for {
		p.mu.Lock()
		p.settleLocked(&st)
		if w.extra && (p.closed || int64(p.extras) > p.stuck.Load()) {
			p.retireLocked(w)
			p.mu.Unlock()
			return
		}
		var h *Handle
		h, now = p.popLocked(now)
		if h == nil {
			if p.closed || w.extra {
				if w.extra {
					p.retireLocked(w)
				}
				p.mu.Unlock()
				return
			}
			w.lend.Store(lendFree)
			w.parked = true
			p.parked = append(p.parked, w)
			p.mu.Unlock()
			for i := 0; i < spinBeforePark && p.queued.Load() == 0 && !p.closedFlag.Load(); i++ {
				runtime.Gosched()
			}
			p.mu.Lock()
			if w.parked && (p.q.Len() > 0 || p.closed) && w.lend.CompareAndSwap(lendFree, lendAwake) {
				// Work arrived and nobody woke us for it: take the slot back.
				p.removeParkedLocked(w)
				p.mu.Unlock()
				now = p.now()
				continue
			}
			// Sleep. Already woken: a token waits in w.wake. Idle or lent: a
			// pusher, the borrower's giveBack or Close will wake us.
			p.mu.Unlock()
			<-w.wake
			s.lastGosched = p.now()
			now = s.lastGosched
			continue
		}
		p.mu.Unlock()
		// The end of one step is the start of the next pop: one clock read
		// per step, not two.
		now = p.step(s, h, now, true, &st)
		if now-s.lastGosched >= p.goschedEvery {
			// Hand the P back before the next task: the program's other
			// goroutines would otherwise wait for Go's 10 ms preemption.
			runtime.Gosched()
			s.lastGosched = p.now()
			now = s.lastGosched
		}
	}
}

func (p *Pool) retireLocked(w *worker) {
	p.extras--
	p.retired.add(&w.own.stats)
}

// popLocked pops the next task that should step, taking it to POLLING.
// Tombstones (tasks completed while queued) are skipped; tasks whose context
// is done or that were cancelled are completed without stepping.
func (p *Pool) popLocked(now time.Duration) (*Handle, time.Duration) {
	for {
		e := p.q.Pop(now)
		if e == nil {
			return nil, now
		}
		p.queued.Add(-1)
		if e.Level == 0 {
			p.urgent.Add(-1)
		}
		h := e.h
		if !h.state.CompareAndSwap(stateNotified, statePolling) {
			p.q.Done(e, 0, now) // a tombstone
			continue
		}
		if err := h.stopReason(); err != nil {
			p.dropped.Add(1)
			p.q.Done(e, 0, now)
			h.state.Store(stateCompleted)
			p.mu.Unlock()
			p.completed.Add(1)
			p.end(h, err)
			p.mu.Lock()
			p.active--
			p.liveDoneLocked()
			p.release(h)
			now = p.now()
			continue
		}
		return h, now
	}
}

// step runs one step of h, which the caller holds in POLLING, on slot w,
// then files the task by its status. A task completed on a worker leaves
// its bookkeeping in st. step returns the pool time at the end.
func (p *Pool) step(w *slot, h *Handle, start time.Duration, gosched bool, st *settlement) time.Duration {
	e := &h.e
	wait := start - e.enqueued
	sc := &w.sc
	*sc = StepContext{h: h, p: p, w: w, start: start, deadline: start + p.opts.TimeSlice, budget: p.opts.Budget, gosched: gosched, preemptible: e.Level > 0}
	w.stepStart.Store(int64(start) + 1)
	p.pokeMonitor()

	status, perr := callStep(h.t, sc)

	end := p.now()
	w.stepStart.Store(0)
	if w.longFor.Swap(0) != 0 {
		p.stuck.Add(-1)
	}
	elapsed := end - start
	e.Elapsed += elapsed
	if !h.recycle || h.escaped { // a Go task's figures have no reader
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
	if a := p.opts.Accountant; a != nil {
		a.Charge(e.Group, Usage{Exec: elapsed, Rows: sc.rows, Bytes: sc.bytes})
	}
	sc.h, sc.w = nil, nil // the context is dead: drop references

	if perr != nil || status == Ready {
		h.state.Store(stateCompleted)
		w.stats.completed.Add(1)
		p.end(h, perr)
		if h.tracked {
			*st = settlement{e: e, elapsed: elapsed, now: end}
		} else {
			// It finished in its inline first step: nothing to settle.
			p.release(h)
		}
		return end
	}
	if status == Yield {
		h.yields.Add(1)
		w.stats.yields.Add(1)
	} else {
		h.pendings.Add(1)
		w.stats.pendings.Add(1)
		if h.stopCtx == nil && h.ctx.Done() != nil {
			// Nobody else would notice a waiting task's context ending. The
			// watch holds h, so h is no longer the pool's to recycle.
			h.escaped = true
			h.stopCtx = context.AfterFunc(h.ctx, func() { h.Cancel(h.ctx.Err()) })
		}
	}

	p.mu.Lock()
	if !h.tracked {
		// An inline first step that wants to go on: adopt the task, and
		// let the queue account that step as if it had popped it.
		h.tracked = true
		p.live++
		p.active++
		p.q.Ran(e, start)
	}
	err := h.stopReason()
	if p.closed {
		err = ErrClosed
	}
	switch {
	case err != nil:
		p.q.Done(e, elapsed, end)
		h.state.Store(stateCompleted)
		p.mu.Unlock()
		p.finish(h, err, true)
	case status == Yield:
		h.state.Store(stateNotified)
		// Push before Done, so that the MLFQ sees the task's level still
		// busy and does not treat its return as a level back from idleness.
		w := p.pushLocked(h, end)
		p.q.Done(e, elapsed, end)
		p.mu.Unlock()
		wake(w)
	default: // Pending
		p.q.Done(e, elapsed, end)
		p.insertIdleLocked(h)
		if h.state.CompareAndSwap(statePolling, stateIdle) {
			p.active--
		} else {
			// Woken during the step: straight back into the queue.
			p.removeIdleLocked(h)
			h.state.Store(stateNotified)
			wake(p.pushLocked(h, end))
		}
		p.mu.Unlock()
	}
	return end
}

func callStep(t Task, sc *StepContext) (s Status, perr error) {
	defer func() {
		if r := recover(); r != nil {
			perr = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return t.Step(sc), nil
}

// requeue puts a woken task, which Wake moved to NOTIFIED, back in the queue.
func (p *Pool) requeue(h *Handle) {
	p.wakes.Add(1)
	now := p.now()
	p.mu.Lock()
	p.removeIdleLocked(h)
	p.active++ // a Cancel that wins the race below gives it back
	if p.closed {
		p.mu.Unlock()
		if h.state.CompareAndSwap(stateNotified, stateCompleted) {
			p.finish(h, ErrClosed, true)
		}
		return
	}
	w := p.pushLocked(h, now)
	p.mu.Unlock()
	wake(w)
}

func (p *Pool) insertIdleLocked(h *Handle) {
	h.inIdle = true
	h.idlePrev = p.idleHead.idlePrev
	h.idleNext = &p.idleHead
	h.idlePrev.idleNext = h
	p.idleHead.idlePrev = h
	p.idleN++
}

func (p *Pool) removeIdleLocked(h *Handle) {
	if !h.inIdle {
		return
	}
	h.inIdle = false
	h.idlePrev.idleNext = h.idleNext
	h.idleNext.idlePrev = h.idlePrev
	h.idlePrev, h.idleNext = nil, nil
	p.idleN--
}

// finish ends a task the caller has just moved to COMPLETED, off the
// workers' hot path. counted says whether it held one of the MaxTasks
// places (queued or running) rather than waiting idle.
func (p *Pool) finish(h *Handle, err error, counted bool) {
	p.completed.Add(1)
	p.end(h, err)
	if h.tracked {
		p.mu.Lock()
		if counted {
			p.active--
		}
		p.liveDoneLocked()
		p.mu.Unlock()
	}
	p.release(h)
}

// end calls the task's Done and counts how it ended.
func (p *Pool) end(h *Handle, err error) {
	if h.stopCtx != nil {
		h.stopCtx()
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

func (p *Pool) liveDoneLocked() {
	p.live--
	p.maybeDrainedLocked()
}

func (p *Pool) maybeDrainedLocked() {
	if p.live == 0 && p.closed && !p.drainedDone {
		p.drainedDone = true
		close(p.drained)
	}
}

// Close stops the pool: Spawn fails with ErrClosed from now on, queued and
// waiting tasks are completed with ErrClosed, running steps are waited for
// (a task that would go on is completed with ErrClosed instead). When Close
// returns every accepted task's Done has returned and no pool goroutine is
// left. Close is idempotent; concurrent calls wait for the first.
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
	var queued, idle []*Handle
	for e := p.q.Pop(now); e != nil; e = p.q.Pop(now) {
		p.queued.Add(-1)
		if e.Level == 0 {
			p.urgent.Add(-1)
		}
		p.q.Done(e, 0, now)
		if e.h.state.CompareAndSwap(stateNotified, stateCompleted) {
			queued = append(queued, e.h)
		}
	}
	for h := p.idleHead.idleNext; h != &p.idleHead; {
		next := h.idleNext
		if h.state.CompareAndSwap(stateIdle, stateCompleted) {
			p.removeIdleLocked(h)
			idle = append(idle, h)
		}
		h = next
	}
	// Wake the idle workers so they exit; one whose slot is lent is woken
	// by its borrower's giveBack, so the wait below also covers steps
	// running inline.
	for i := len(p.parked) - 1; i >= 0; i-- {
		if w := p.parked[i]; w.lend.CompareAndSwap(lendFree, lendAwake) {
			p.unparkLocked(w)
		}
	}
	p.maybeDrainedLocked()
	p.mu.Unlock()

	for _, h := range queued {
		p.finish(h, ErrClosed, true)
	}
	for _, h := range idle {
		p.finish(h, ErrClosed, false)
	}
	close(p.quit)
	p.wg.Wait()
	<-p.drained
	close(p.closeDone)
	return nil
}

func (p *Pool) unidle(h *Handle) {
	p.mu.Lock()
	p.removeIdleLocked(h)
	p.mu.Unlock()
}

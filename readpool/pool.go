package readpool

import (
	"context"
	"errors"
	"fmt"
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

func (o *Options) ensureDefaults() {
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
	if o.Queue == nil {
		o.Queue = NewMLFQ(MLFQOptions{})
	}
	if o.goschedEvery == 0 {
		o.goschedEvery = o.TimeSlice / 4
	}
}

// validate reports every problem at once.
func (o *Options) validate() error {
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
	opts  Options
	epoch time.Time
	// goschedEvery is copied out of opts for the ShouldYield fast path.
	goschedEvery time.Duration

	mu       sync.Mutex
	q        Queue
	closed   bool
	parked   []*worker // parked workers whose slot is free: LIFO, warm first
	idleHead Handle    // sentinel of the list of Pending tasks
	idleN    int
	extras   int
	spawned  int64 // accepted tasks
	inline   int64 // first steps run on the caller's goroutine
	retired  workerStats

	closedFlag atomic.Bool  // mirrors closed for lock-free fast paths
	active     atomic.Int64 // queued + running tasks, against MaxTasks
	live       atomic.Int64 // accepted tasks whose Done has not returned
	rejected   atomic.Int64
	cancelled  atomic.Int64
	panicked   atomic.Int64
	wakes      atomic.Int64
	longSteps  atomic.Int64
	stuck      atomic.Int64 // workers in a step longer than LongStep

	workers       []*worker
	wg            sync.WaitGroup // workers, extra workers, monitor
	quit          chan struct{}
	monitorParked atomic.Bool
	monitorWake   chan struct{}
	drained       chan struct{} // closed when live reaches 0 after Close
	drainedOnce   sync.Once
	closeDone     chan struct{}
}

// worker is one pool goroutine and its execution slot. A caller that runs a
// first step inline borrows a parked worker's slot, and with it the
// worker's StepContext and counters, which are then its alone.
type worker struct {
	wake        chan struct{} // capacity 1: a parked worker is woken by one send
	sc          StepContext
	lastGosched time.Duration
	extra       bool

	// stepStart is the pool time the current step began, +1 (0 = idle);
	// read by the monitor. longFor is the stepStart of a step the monitor
	// found stuck (0 = none): every successful set of it is matched by one
	// successful clear, and Pool.stuck is raised before the set and lowered
	// after the clear, so stuck counts flagged steps and never goes below 0.
	stepStart atomic.Int64
	longFor   atomic.Int64

	stats workerStats
}

type workerStats struct {
	steps, yields, pendings atomic.Int64
	wait, step              hist.Histogram
}

func (s *workerStats) add(o *workerStats) {
	s.steps.Add(o.steps.Load())
	s.yields.Add(o.yields.Load())
	s.pendings.Add(o.pendings.Load())
	s.wait.Merge(&o.wait)
	s.step.Merge(&o.step)
}

// New starts a pool.
func New(opts Options) (*Pool, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts.ensureDefaults()
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
	if p.closedFlag.Load() {
		return nil, ErrClosed
	}
	if p.active.Add(1) > int64(p.opts.MaxTasks) {
		p.active.Add(-1)
		p.rejected.Add(1)
		return nil, ErrBusy
	}
	h := &Handle{p: p, t: t, ctx: ctx}
	h.e = Entry{TaskID: o.TaskID, Fixed: o.Fixed, FixedLevel: o.Level, Group: o.Group, Priority: o.Priority, h: h}
	// live is raised before closed is checked under mu, so a Close that
	// has not yet set closed will wait for this task.
	p.live.Add(1)
	now := p.now()
	h.e.enqueued = now

	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.active.Add(-1)
		p.liveDone()
		return nil, ErrClosed
	}
	p.spawned++
	if err := ctx.Err(); err != nil {
		p.mu.Unlock()
		h.state.Store(stateCompleted)
		p.finish(h, err, true)
		return h, nil
	}
	if o.Inline && len(p.parked) > 0 && p.q.Len() == 0 {
		w := p.parked[len(p.parked)-1]
		p.parked = p.parked[:len(p.parked)-1]
		p.q.Push(&h.e, now)
		p.q.Pop(now) // the queue was empty: this is h
		h.state.Store(statePolling)
		p.inline++
		p.mu.Unlock()
		p.step(w, h, now, false)
		p.returnSlot(w)
		return h, nil
	}
	h.state.Store(stateNotified)
	p.q.Push(&h.e, now)
	p.wakeOneLocked()
	p.mu.Unlock()
	return h, nil
}

// wakeOneLocked hands a queued task's slot to a parked worker, if any.
func (p *Pool) wakeOneLocked() {
	if n := len(p.parked); n > 0 {
		w := p.parked[n-1]
		p.parked = p.parked[:n-1]
		w.wake <- struct{}{}
	}
}

// returnSlot gives a borrowed slot back: to its worker when there is work
// (or the pool is closing, so the worker exits), else to the parked set.
func (p *Pool) returnSlot(w *worker) {
	p.mu.Lock()
	if p.closed || p.q.Len() > 0 {
		w.wake <- struct{}{}
	} else {
		p.parked = append(p.parked, w)
	}
	p.mu.Unlock()
}

// work is a worker's loop: pop, step, cooperate with Go's scheduler, park
// when there is nothing to do. An extra worker exits instead of parking, and
// as soon as there are more extras than stuck steps.
func (p *Pool) work(w *worker) {
	defer p.wg.Done()
	w.lastGosched = p.now()
	for {
		p.mu.Lock()
		if w.extra && (p.closed || int64(p.extras) > p.stuck.Load()) {
			p.retireLocked(w)
			p.mu.Unlock()
			return
		}
		h, now := p.popLocked()
		for h == nil {
			if w.extra {
				p.retireLocked(w)
			}
			if p.closed || w.extra {
				p.mu.Unlock()
				return
			}
			p.parked = append(p.parked, w)
			p.mu.Unlock()
			<-w.wake
			w.lastGosched = p.now()
			p.mu.Lock()
			h, now = p.popLocked()
		}
		p.mu.Unlock()
		end := p.step(w, h, now, true)
		if end-w.lastGosched >= p.goschedEvery {
			// Hand the P back before the next task: the program's other
			// goroutines would otherwise wait for Go's 10 ms preemption.
			runtime.Gosched()
			w.lastGosched = p.now()
		}
	}
}

func (p *Pool) retireLocked(w *worker) {
	p.extras--
	p.retired.add(&w.stats)
}

// popLocked pops the next task that should step, taking it to POLLING.
// Tombstones (tasks completed while queued) are skipped; tasks whose context
// is done or that were cancelled are completed without stepping.
func (p *Pool) popLocked() (*Handle, time.Duration) {
	for {
		now := p.now()
		e := p.q.Pop(now)
		if e == nil {
			return nil, now
		}
		h := e.h
		if !h.state.CompareAndSwap(stateNotified, statePolling) {
			p.q.Done(e, 0, now) // a tombstone
			continue
		}
		if err := h.stopReason(); err != nil {
			p.q.Done(e, 0, now)
			h.state.Store(stateCompleted)
			p.mu.Unlock()
			p.finish(h, err, true)
			p.mu.Lock()
			continue
		}
		return h, now
	}
}

// step runs one step of h, which the caller holds in POLLING, on w's slot,
// then files the task by its status. It returns the pool time at the end.
func (p *Pool) step(w *worker, h *Handle, start time.Duration, gosched bool) time.Duration {
	e := &h.e
	wait := start - e.enqueued
	sc := &w.sc
	*sc = StepContext{h: h, p: p, w: w, start: start, deadline: start + p.opts.TimeSlice, budget: p.opts.Budget, gosched: gosched}
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
	h.steps.Add(1)
	h.wait.Add(int64(wait))
	h.exec.Add(int64(elapsed))
	if sc.rows != 0 || sc.bytes != 0 {
		h.rows.Add(sc.rows)
		h.bytes.Add(sc.bytes)
	}
	w.stats.steps.Add(1)
	w.stats.wait.Record(wait)
	w.stats.step.Record(elapsed)
	if a := p.opts.Accountant; a != nil {
		a.Charge(e.Group, Usage{Exec: elapsed, Rows: sc.rows, Bytes: sc.bytes})
	}
	sc.h, sc.w = nil, nil // the context is dead: drop references

	if perr != nil {
		p.completeAfterStep(h, elapsed, end, perr)
		return end
	}
	switch status {
	case Ready:
		p.completeAfterStep(h, elapsed, end, nil)
	case Yield:
		h.yields.Add(1)
		w.stats.yields.Add(1)
		p.requeueAfterStep(h, elapsed, end)
	default: // Pending
		h.pendings.Add(1)
		w.stats.pendings.Add(1)
		p.idleAfterStep(h, elapsed, end)
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

func (p *Pool) completeAfterStep(h *Handle, elapsed, now time.Duration, err error) {
	p.mu.Lock()
	p.q.Done(&h.e, elapsed, now)
	p.mu.Unlock()
	h.state.Store(stateCompleted)
	p.finish(h, err, true)
}

func (p *Pool) requeueAfterStep(h *Handle, elapsed, now time.Duration) {
	p.mu.Lock()
	if err := p.stopAfterStepLocked(h); err != nil {
		p.q.Done(&h.e, elapsed, now)
		p.mu.Unlock()
		h.state.Store(stateCompleted)
		p.finish(h, err, true)
		return
	}
	h.state.Store(stateNotified)
	h.e.enqueued = now
	// Push before Done, so that the MLFQ sees the task's level still busy
	// and does not treat its return as a level coming back from idleness.
	p.q.Push(&h.e, now)
	p.q.Done(&h.e, elapsed, now)
	p.mu.Unlock()
}

func (p *Pool) idleAfterStep(h *Handle, elapsed, now time.Duration) {
	if h.stopCtx == nil && h.ctx.Done() != nil {
		// Nobody else would notice a waiting task's context ending.
		h.stopCtx = context.AfterFunc(h.ctx, func() { h.Cancel(h.ctx.Err()) })
	}
	p.mu.Lock()
	if err := p.stopAfterStepLocked(h); err != nil {
		p.q.Done(&h.e, elapsed, now)
		p.mu.Unlock()
		h.state.Store(stateCompleted)
		p.finish(h, err, true)
		return
	}
	p.q.Done(&h.e, elapsed, now)
	p.insertIdleLocked(h)
	if h.state.CompareAndSwap(statePolling, stateIdle) {
		p.mu.Unlock()
		p.active.Add(-1)
		return
	}
	// Woken during the step: straight back into the queue.
	p.removeIdleLocked(h)
	h.state.Store(stateNotified)
	h.e.enqueued = now
	p.q.Push(&h.e, now)
	p.wakeOneLocked()
	p.mu.Unlock()
}

// stopAfterStepLocked is why a task that wants to go on must end instead.
func (p *Pool) stopAfterStepLocked(h *Handle) error {
	if p.closed {
		return ErrClosed
	}
	return h.stopReason()
}

// requeue puts a woken task (now NOTIFIED) back in the queue.
func (p *Pool) requeue(h *Handle) {
	p.wakes.Add(1)
	p.active.Add(1)
	now := p.now()
	p.mu.Lock()
	p.removeIdleLocked(h)
	if p.closed {
		p.mu.Unlock()
		if h.state.CompareAndSwap(stateNotified, stateCompleted) {
			p.finish(h, ErrClosed, true)
		} else {
			p.active.Add(-1) // a Cancel completed it first
		}
		return
	}
	h.e.enqueued = now
	p.q.Push(&h.e, now)
	p.wakeOneLocked()
	p.mu.Unlock()
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

func (p *Pool) unidle(h *Handle) {
	p.mu.Lock()
	p.removeIdleLocked(h)
	p.mu.Unlock()
}

// finish ends a task the caller has just moved to COMPLETED. counted says
// whether it held one of the MaxTasks places (queued or running).
func (p *Pool) finish(h *Handle, err error, counted bool) {
	if counted {
		p.active.Add(-1)
	}
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
	p.liveDone()
}

func callDone(t Task, err error, panicked *atomic.Int64) {
	defer func() {
		if recover() != nil {
			panicked.Add(1) // the task's own cleanup failed; the pool goes on
		}
	}()
	t.Done(err)
}

func (p *Pool) liveDone() {
	if p.live.Add(-1) == 0 && p.closedFlag.Load() {
		p.drainedOnce.Do(func() { close(p.drained) })
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
	for _, w := range p.parked {
		w.wake <- struct{}{}
	}
	p.parked = nil
	p.mu.Unlock()

	for _, h := range queued {
		p.finish(h, ErrClosed, true)
	}
	for _, h := range idle {
		p.finish(h, ErrClosed, false)
	}
	close(p.quit)
	p.wg.Wait()
	if p.live.Load() == 0 {
		p.drainedOnce.Do(func() { close(p.drained) })
	}
	<-p.drained
	close(p.closeDone)
	return nil
}

package readpool

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/internal/stripe"
)

// Options configures a Pool. The zero value is valid: every zero field takes
// its documented default.
type Options struct {
	// Workers is the number of steps that may run on the CPU at once, one
	// per pool worker; 0 = runtime.GOMAXPROCS(0). A step blocked off the
	// CPU (Pool.EnterBlocking: a read from a slow disk) does not count
	// against it: another ready task runs meanwhile, on an extra worker.
	Workers int
	// MaxWorkers bounds the goroutines that step tasks at once — workers,
	// spares and extras (those standing in for steps blocked off the CPU
	// or stuck on it); 0 = 64 × Workers: on a disk of 1 ms a read, 64 reads
	// in flight per core, as many as a goroutine per request would keep
	// there under a load of a few dozen clients, while memory stays bounded
	// (a goroutine's stack each). At least Workers (raised to it); equal to
	// it, no step runs beside a blocked or stuck one.
	MaxWorkers int
	// MaxTasks is how many tasks may be queued or running before Spawn
	// fails with ErrBusy; 0 = Workers × 2000 (TiKV's default per worker).
	// Pending tasks do not count (tikv #18491), nor do first steps running
	// inline on their callers (SpawnOptions.Inline): there are at most
	// Workers of those, they hold no queue room, and counting them would
	// put a shared counter on every Get.
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
	// Governor, when set, sees every task's totals after each step and may
	// demote or stop it from its next step (runaway reads).
	Governor Governor
	// Spares is the number of spare workers beyond Workers that step only
	// the queue's urgent work (UrgentPopper: the MLFQ's point reads), and
	// only while every worker is busy; 0 = 1 when the queue is an
	// UrgentPopper, negative = none. A worker that hands its P to the
	// caller its step readied waits on Go's global run queue for its next
	// turn, which a busy P looks at only every 61st schedule; a Get queued
	// meanwhile waited for it (its service p99 beside 8 scans was ~0.5 ms
	// on 2 CPUs). A parked spare woken by the Get's spawner runs next on
	// the spawner's P as soon as the spawner blocks on the result (see
	// spare.go). Up to Workers + Spares steps may thus run at once, the
	// extra ones urgent ones only.
	Spares int
	// CooledSlots caps the demoted tasks (runaway reads in cooldown) ready
	// or running at once, whatever the Queue; the others wait their turn,
	// held back (cooled.go). 0 = no cap.
	CooledSlots int

	// goschedEvery is how much step time a worker runs before it hands its
	// P back to the Go scheduler; 0 = TimeSlice / 4, at most 100 µs.
	goschedEvery time.Duration
	// cpuTime, if set, replaces the process's CPU clock of the CPU
	// controller (cpu.go): tests pass a fake one.
	cpuTime func() time.Duration
	// handoffDelay is how long a worker that readied a blocked caller may
	// go on stepping new tasks before it gives its P to that caller;
	// 0 = defaultHandoffDelay, negative = at once.
	handoffDelay time.Duration
}

// maxGoschedEvery caps how long a worker keeps its P between hand-backs to
// Go's scheduler, whatever the slice. A P that takes a goroutine from Go's
// global run queue (it does every 61st schedule) may take a worker there,
// and whatever is next on that P — a spare about to step a Get — waits for
// the worker's next hand-back. Measured beside 32 scanners (kvbench
// --scanners 32, two rounds each, 2026-12-03): a Get's service p99 349 µs
// at a quarter of the 1 ms slice, 194–198 µs at 100 µs, 189–193 µs at
// 50 µs; scans 95/95, 91/98 and 94/95 in 3 s.
const maxGoschedEvery = 100 * time.Microsecond

// defaultHandoffDelay bounds what a deferred hand-off adds to a Get's
// service time: a few Gets' steps.
const defaultHandoffDelay = 50 * time.Microsecond

// Accountant is told what each step consumed. Resource control implements
// it to advance its groups' virtual time; it is called outside the pool's
// locks, from the goroutine that ran the step, with the task's entry (whose
// Group and Tag the spawner set and nobody changes).
type Accountant interface {
	Charge(e *Entry, u Usage)
}

// Usage is what one step consumed.
type Usage struct {
	Exec  time.Duration
	Rows  int64
	Bytes int64
	// First is set for the task's first step, so that a per-request charge
	// is made once.
	First bool
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
	if o.MaxWorkers == 0 {
		o.MaxWorkers = 64 * o.Workers
	}
	// Workers taken from GOMAXPROCS may exceed an explicit MaxWorkers.
	o.MaxWorkers = max(o.MaxWorkers, o.Workers)
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
		o.goschedEvery = min(o.TimeSlice/4, maxGoschedEvery)
	}
	if o.handoffDelay == 0 {
		o.handoffDelay = defaultHandoffDelay
	}
	if o.handoffDelay < 0 {
		o.handoffDelay = 0
	}
	if o.Spares == 0 {
		if _, ok := o.Queue.(UrgentPopper); ok {
			o.Spares = 1
		}
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
	if o.MaxWorkers < 0 {
		errs = append(errs, fmt.Errorf("readpool: MaxWorkers %d is negative", o.MaxWorkers))
	} else if o.MaxWorkers != 0 && o.MaxWorkers < max(o.Workers, 1) {
		errs = append(errs, fmt.Errorf("readpool: MaxWorkers %d is below Workers %d", o.MaxWorkers, max(o.Workers, 1)))
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
	if o.CooledSlots < 0 {
		errs = append(errs, fmt.Errorf("readpool: CooledSlots %d is negative", o.CooledSlots))
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
	// Tag is an opaque extra for the queue and the Accountant (Entry.Tag),
	// e.g. the task's resource group resolved once at spawn.
	Tag any
	// Priority is a value a queue may order by (Entry.Priority).
	Priority uint64
	// Inline lets Spawn run the first step on the caller's goroutine when a
	// worker is idle, nothing is queued and the queue agrees
	// (Queue.MayInline): no hand-off, nobody overtaken, and still at most
	// Workers steps at once. Use it for requests whose caller waits for the
	// result anyway (a Get); not where Spawn must return at once (a Scan).
	Inline bool
	// Short says the task should end in its first step, in microseconds: a
	// point read. A worker whose step readied a blocked caller (Awaited)
	// steps queued Short tasks for up to 50 µs more before it gives that
	// caller its P, so that under a closed loop of readers one hand-off
	// serves several; before any other task it hands the P over at once.
	Short bool
	// Demoted starts the task at the queue's lowest priority (Entry.Demoted):
	// a read a Governor's watch has caught before its first step.
	Demoted bool
	// Origin and Governed start Entry.Origin and Entry.Governed: what the
	// task reads first, and the Governor's state of it.
	Origin   []byte
	Governed any
	// MaxQueueWait, when positive, refuses the task at once with a
	// *BusyError when its estimated wait for its first step — the work
	// queued ahead of it over the workers, at the steps' recent length
	// (estimate.go) — exceeds it: a caller that would rather fail fast
	// than wait.
	MaxQueueWait time.Duration
}

// Pool is a bounded pool of workers that step tasks chosen by its Queue.
//
// Pool composes one type per concurrent protocol, each in its own file
// with its rules in one place and, where it has a clock or a decision, the
// time or its environment passed in, so that it is tested without
// goroutines:
//
//   - the task state word (task.go): every transition of a task;
//   - slots (slots.go): the workers' execution slots, which workers are
//     parked, and the lending of their slots to callers that step inline —
//     the lend states and every move between them;
//   - handoff (handoff.go): what a worker does with its P between steps, a
//     decision its loop asks;
//   - monitor (monitor.go): steps longer than LongStep, and how many extra
//     workers stand in for them;
//   - heldTimer (heldtimer.go): the timer that wakes a worker when a task
//     the queue holds back is due;
//   - extraRule (blocking.go): how many extra workers may step beside the
//     workers while steps are blocked off the CPU or stuck on it;
//   - slackPolicy and cpuMeter (cpu.go): the CPU controller that lets more
//     steps run while reads block and the CPU has room.
//
// The pool holds the lock they share (mu) and the rest: spawning
// (spawn.go, bypass.go), a task's life in and out of the queue and the
// waiting list, and its completion (life.go), stepping (step.go, here.go),
// the worker loop and parking (worker.go), spare workers (spare.go), local
// queues (local.go), closing (close.go) and figures (stats.go).
type Pool struct {
	mu sync.Mutex
	// queued mirrors q.Len() for lock-free readers (the inline fast path,
	// spinning workers). It sits beside mu: it changes only under mu, so
	// it rides the cache line the lock already brought.
	queued atomic.Int64

	// Under mu. q is opts.Queue with the pool's cooldown around it
	// (cooled.go); the optional capabilities (Admitter, UrgentPopper,
	// Batcher, Kickable, QueuePosition) are opts.Queue's.
	q        Queue
	closed   bool
	waiting  Handle // sentinel of the list of WAITING tasks
	waitingN int
	running  int          // tasks taken from the queue (or adopted after an inline step) whose step has not been filed
	extras   extras       // the extra workers (extras.go)
	spares   spares       // the spare workers (spare.go)
	urgent   UrgentPopper // q, when it is one and spares run
	batcher  Batcher      // q, when it is one: workers take batches (local.go)
	spawned  int64        // accepted tasks, but for those run inline (counted per slot)
	held     heldTimer    // wakes a worker when a held task's time comes (heldtimer.go)
	retired  workerStats

	opts  Options
	epoch time.Time
	pre   *Preemption // the queue's hint, read per unit of work
	// goschedEvery is copied out of opts for the ShouldYield fast path.
	goschedEvery time.Duration

	closedFlag   atomic.Bool  // mirrors closed for lock-free fast paths
	completedOff atomic.Int64 // tasks ended off the workers' step path
	rejected     atomic.Int64
	waits        waitStats // tasks with a MaxQueueWait (estimate.go)
	cancelled    atomic.Int64
	dropped      atomic.Int64
	panicked     atomic.Int64
	wakes        atomic.Int64
	preempted    atomic.Int64   // steps cut short for more urgent work
	bypassed     stripe.Counter // reads served by Bypass, without a task
	// longLive counts the accepted, not yet completed tasks that are not
	// point reads (SpawnOptions.Short): scans, coprocessor requests.
	longLive atomic.Int64

	handles sync.Pool // recycled handles of Go tasks (see Handle.gen)
	entries sync.Pool // Bypass's entries: the queue's and Accountant's calls take a pointer
	// slots are the workers, and which of them are parked (under mu) or
	// lent (slots.go).
	slots  slots
	wg     sync.WaitGroup // workers, extra workers, monitor
	ending sync.WaitGroup // completions made off the workers (cancels, context ends)
	quit   chan struct{}
	// mon watches for long steps and asks for extra workers (monitor.go).
	mon       monitor
	closeDone chan struct{}
	inv       poolInvariants

	// On cache lines of their own: every spawn that finds no parked
	// worker reads blocked and slack, which change only while reads block;
	// the counters above change per task.
	_ [64]byte
	// blocked counts the goroutines blocked off the CPU between
	// EnterBlocking and ExitBlocking (blocking.go).
	blocked atomic.Int64
	// slack is how many steps more than the blocked reads the CPU
	// controller lets run while reads block (cpu.go); it and meter are
	// written only by the monitor's loop.
	slack       atomic.Int64
	refused     atomic.Bool // a caller found no extra slot to step in (borrowExtra)
	_           [64]byte
	meter       cpuMeter
	slackPolicy slackPolicy
}

// New starts a pool.
func New(opts Options) (*Pool, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Queue == nil {
		opts.Queue = NewMLFQ(MLFQOptions{})
	}
	opts.EnsureDefaults()
	p := &Pool{
		opts:         opts,
		epoch:        time.Now(),
		goschedEvery: opts.goschedEvery,
		q:            newCooledQueue(opts.Queue, opts.CooledSlots),
		pre:          opts.Queue.Preemption(),
		quit:         make(chan struct{}),
		closeDone:    make(chan struct{}),
	}
	if p.pre == nil {
		return nil, errors.New("readpool: the queue returned a nil Preemption")
	}
	p.held = heldTimer{retry: opts.TimeSlice, env: goTimer(p.heldReady)}
	p.batcher, _ = opts.Queue.(Batcher)
	if k, ok := opts.Queue.(Kickable); ok {
		k.SetKick(p.Kick)
	}
	p.handles.New = func() any { return newHandle(p) }
	p.entries.New = func() any { return new(Entry) }
	p.waiting.waitNext, p.waiting.waitPrev = &p.waiting, &p.waiting
	p.slots = newSlots(opts.Workers)
	// Ready before any step: every step tells it when it starts and ends.
	p.mon.init(opts.LongStep, p.slots.workers, p.quit, monitorEnv{now: p.now, onStuck: func() {
		p.mu.Lock()
		p.startExtrasLocked()
		p.mu.Unlock()
	}, tick: p.slackTick, fastPeriod: slackPeriod})
	p.meter = cpuMeter{env: goCPUEnv(p.now)}
	if opts.cpuTime != nil {
		p.meter.env.cpuTime = opts.cpuTime
	}
	// Started once all exist: a worker that steals reads the list.
	for _, w := range p.slots.workers {
		p.wg.Add(1)
		go p.work(w)
	}
	p.startSpares()
	p.extras.rule = newExtraRule(&p.opts, len(p.spares.workers))
	p.slackPolicy = defaultSlackPolicy(p.extras.rule.maxExtras)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.mon.run()
	}()
	return p, nil
}

// Options returns the options in force, defaults filled in.
func (p *Pool) Options() Options { return p.opts }

// now is the pool's monotonic clock: time.Since of a monotonic reading costs
// one clock read, not the two of time.Now.
func (p *Pool) now() time.Duration { return time.Since(p.epoch) }

package readpool

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// Status is what a step reports about its task.
type Status uint8

const (
	// Ready: the task has finished; the pool calls its Done(nil).
	Ready Status = iota
	// Yield: the task used its slice or budget and wants to run again; it
	// goes back to the queue at once.
	Yield
	// Pending: the task cannot go on until an event; whoever produces the
	// event calls Handle.Wake. Until then it holds no worker and does not
	// count against MaxTasks.
	Pending
)

// String returns the status name.
func (s Status) String() string {
	switch s {
	case Ready:
		return "ready"
	case Yield:
		return "yield"
	case Pending:
		return "pending"
	}
	return "unknown"
}

// Task is a resumable unit of work. The pool calls Step repeatedly, never
// from two goroutines at once, and then Done exactly once.
type Task interface {
	// Step does a bounded amount of work. It must ask sc.ShouldYield before
	// each unit of work (a batch, a row group) and return Yield when told.
	Step(sc *StepContext) Status
	// Done is called once when the task ends: with nil after Step returned
	// Ready; otherwise with the reason it was ended early — the context's
	// error, the error given to Handle.Cancel, ErrClosed, or a *PanicError.
	// Done must release everything the task holds. After Done returns the
	// pool never touches the task again.
	Done(err error)
}

// Task states, one atomic word per task (as in YATP). Every transition is a
// compare-and-swap or a store by the goroutine that owns the task in that
// state; there is no lock per task.
//
//	NOTIFIED ──pop──► POLLING ──Ready──► COMPLETED
//	   ▲                │ ▲
//	   │      Pending   │ │ wake during the step
//	   └──wake── IDLE ◄─┘ └──► NOTIFIED_POLLING ──step returns──► NOTIFIED
const (
	stateNotified        uint32 = iota // queued, or about to be
	statePolling                       // a worker is running its step
	stateNotifiedPolling               // woken while polling: requeue after the step
	stateIdle                          // pending, waiting for a wake
	stateCompleted                     // done; wakes are no-ops
)

// Handle is a spawned task's identity: it wakes the task, cancels it and
// reports its statistics. A Handle stays valid after the task completes (its
// methods are then no-ops or report final figures).
type Handle struct {
	e     Entry
	state atomic.Uint32
	p     *Pool
	t     Task
	ctx   context.Context

	// cancel is the error a Cancel asked for; checked before every step.
	cancel atomic.Pointer[error]
	// stopCtx deregisters the context watch installed at the first Pending.
	// Written by the stepping goroutine before the POLLING→IDLE CAS and read
	// by whoever completes the task after a later CAS, so the state word
	// orders the two.
	stopCtx func() bool

	// The pool's list of idle tasks, under Pool.mu, so Close can end them.
	idlePrev, idleNext *Handle
	inIdle             bool
	// tracked: counted in Pool.live. False only while an inline first step
	// runs; written by the stepping goroutine before any hand-over.
	tracked bool
	// recycle: spawned by Go, so the pool may reuse the handle once the
	// task ends — unless escaped, set when the task took its handle.
	recycle, escaped bool

	steps, yields, pendings, wakes atomic.Int64
	wait, exec                     atomic.Int64
	rows, bytes                    atomic.Int64
}

// TaskStats describes how a task has waited and run so far.
type TaskStats struct {
	Steps    int           `json:"steps"`
	Yields   int           `json:"yields"`
	Pendings int           `json:"pendings"`
	Wakes    int           `json:"wakes"`
	WaitTime time.Duration `json:"wait_ns"` // queued, ready to run
	ExecTime time.Duration `json:"exec_ns"` // running steps
	Rows     int64         `json:"rows"`
	Bytes    int64         `json:"bytes"`
}

// Stats returns the task's figures so far. Safe to call at any time.
func (h *Handle) Stats() TaskStats {
	return TaskStats{
		Steps:    int(h.steps.Load()),
		Yields:   int(h.yields.Load()),
		Pendings: int(h.pendings.Load()),
		Wakes:    int(h.wakes.Load()),
		WaitTime: time.Duration(h.wait.Load()),
		ExecTime: time.Duration(h.exec.Load()),
		Rows:     h.rows.Load(),
		Bytes:    h.bytes.Load(),
	}
}

// Wake makes a Pending task ready again. A wake while the task's step runs
// is remembered and the task is requeued when the step returns; a wake of a
// queued or completed task is a no-op. Safe from any goroutine.
func (h *Handle) Wake() {
	for {
		switch h.state.Load() {
		case stateIdle:
			if h.state.CompareAndSwap(stateIdle, stateNotified) {
				h.wakes.Add(1)
				h.p.requeue(h)
				return
			}
		case statePolling:
			if h.state.CompareAndSwap(statePolling, stateNotifiedPolling) {
				h.wakes.Add(1)
				return
			}
		default:
			return
		}
	}
}

// Cancel ends the task with err (context.Canceled when nil) at its next step
// boundary: at once when it is waiting or queued — Done then runs on the
// calling goroutine — or when its running step returns. The first Cancel's
// error wins; canceling a completed task is a no-op.
func (h *Handle) Cancel(err error) {
	if err == nil {
		err = context.Canceled
	}
	first := err // never written after it is published
	h.cancel.CompareAndSwap(nil, &first)
	err = *h.cancel.Load()
	for {
		switch h.state.Load() {
		case stateIdle:
			if h.state.CompareAndSwap(stateIdle, stateCompleted) {
				h.p.unidle(h)
				h.p.finish(h, err, false)
				return
			}
		case stateNotified:
			// The entry stays in the queue as a tombstone a worker skips.
			if h.state.CompareAndSwap(stateNotified, stateCompleted) {
				h.p.dropped.Add(1)
				h.p.finish(h, err, true)
				return
			}
		case statePolling:
			// Like a wake: a Pending return requeues it, and the check
			// before the next step ends it.
			if h.state.CompareAndSwap(statePolling, stateNotifiedPolling) {
				return
			}
		default:
			return
		}
	}
}

// stopReason is why a task must not take another step, or nil.
func (h *Handle) stopReason() error {
	if c := h.cancel.Load(); c != nil {
		return *c
	}
	return h.ctx.Err()
}

// StepContext is what a step sees of the pool: its context, its handle, and
// whether it should yield. It is valid only during the Step call it was
// passed to; a task must not keep it.
type StepContext struct {
	h        *Handle
	p        *Pool
	w        *slot
	start    time.Duration
	deadline time.Duration
	budget   int
	used     int
	gosched  bool
	// preemptible: the task runs below level 0, so it yields early when
	// level-0 work is queued.
	preemptible bool
	rows        int64
	bytes       int64
}

// Context returns the context the task was spawned with.
func (sc *StepContext) Context() context.Context { return sc.h.ctx }

// Handle returns the task's handle, e.g. to give its waker to a producer
// before returning Pending.
func (sc *StepContext) Handle() *Handle {
	sc.h.escaped = true
	return sc.h
}

// ShouldYield is asked before each unit of work: true means the step has
// used its time slice or its budget, or runs below level 0 while level-0
// work waits, and should return Yield without doing the unit. A false answer uses one unit of budget. The first call of a step
// is always false, so every step makes progress.
//
// On a pool worker it also gives the worker's P back to the Go scheduler
// every quarter slice or so, so that the embedding program's goroutines are
// not left waiting for Go's 10 ms preemption while steps run back to back.
func (sc *StepContext) ShouldYield() bool {
	if sc.used > 0 {
		if sc.used >= sc.budget {
			return true
		}
		if sc.preemptible && sc.p.urgent.Load() > 0 {
			// A short read waits for one unit of this step, not all of it.
			sc.p.preempted.Add(1)
			return true
		}
		now := sc.p.now()
		if now >= sc.deadline {
			return true
		}
		if sc.gosched && now-sc.w.lastGosched >= sc.p.goschedEvery {
			runtime.Gosched()
			sc.w.lastGosched = sc.p.now()
		}
	}
	sc.used++
	return false
}

// Charge records what the step read, for the task's statistics and for
// resource control.
func (sc *StepContext) Charge(rows, bytes int64) {
	sc.rows += rows
	sc.bytes += bytes
}

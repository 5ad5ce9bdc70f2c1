package readpool

import (
	"context"
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

// A task's state is one atomic word (as in YATP). This file holds every
// transition; each is a compare-and-swap or a store by the goroutine that
// owns the task in that state.
//
//	QUEUED ──take──► POLLING ──────────────finish──► COMPLETED
//	  ▲  ▲             │  │ Wake/Cancel during the step    ▲
//	  │  └─requeue─────┘  └──► POLLING_WOKEN ──requeue─┐   │
//	  │                 park                           │   │
//	  └──unpark (Wake)── WAITING ◄─────────────────────┘   │
//	   QUEUED, WAITING ──Cancel, context end, Close────────┘
//
// Under Pool.mu a QUEUED task is always in the queue (ready or held) and a
// WAITING task always in the pool's waiting list: every move into or out of
// those two states happens under the lock, together with the queue or list
// operation. Only the moves of a POLLING task (its step's end, a wake or a
// cancel during the step) are lock-free.
const (
	stateQueued       uint32 = iota // in the queue, or held by it
	statePolling                    // a step runs
	statePollingWoken               // woken or cancelled during the step: requeue or end after it
	stateWaiting                    // returned Pending; waits for Wake
	stateCompleted                  // ended; wakes and cancels are no-ops
)

// take moves a popped task to POLLING. Under Pool.mu.
func (h *Handle) take() bool { return h.state.CompareAndSwap(stateQueued, statePolling) }

// park moves a task whose step returned Pending to WAITING; false means it
// was woken during the step and must be requeued. Under Pool.mu.
func (h *Handle) park() bool { return h.state.CompareAndSwap(statePolling, stateWaiting) }

// unpark moves a WAITING task to QUEUED for a Wake. Under Pool.mu.
func (h *Handle) unpark() bool { return h.state.CompareAndSwap(stateWaiting, stateQueued) }

// requeue moves the stepping goroutine's task back to QUEUED after a
// Yield, or after a Pending whose wake came during the step. Under Pool.mu.
func (h *Handle) requeue() { h.state.Store(stateQueued) }

// finish marks a task the caller owns (POLLING, or inline) COMPLETED.
func (h *Handle) finish() { h.state.Store(stateCompleted) }

// abort moves a QUEUED or WAITING task to COMPLETED; false means it was in
// neither state. Under Pool.mu.
func (h *Handle) abort(from uint32) bool { return h.state.CompareAndSwap(from, stateCompleted) }

// noteWoken records a wake or cancel that arrives while the task's step
// runs, so the end of the step does not lose it. Lock-free.
func (h *Handle) noteWoken() bool {
	return h.state.CompareAndSwap(statePolling, statePollingWoken)
}

// Handle is a spawned task's identity: it wakes the task, cancels it and
// reports its statistics. A Handle stays valid after the task completes (its
// methods are then no-ops or report final figures). Handles are not reused.
type Handle struct {
	e     Entry
	state atomic.Uint32
	p     *Pool
	t     Task
	ctx   context.Context

	// cancel is the error a Cancel asked for; checked before every step.
	cancel atomic.Pointer[error]
	// stopWatch deregisters the context watch that ends the task when its
	// context ends while it is queued or waiting. Written by the goroutine
	// that owns the task before it queues or parks it, read by whoever
	// completes it after a later transition, so the state word (or
	// Pool.mu) orders the two.
	stopWatch func() bool

	// The pool's list of WAITING tasks, under Pool.mu, so Close can end
	// them.
	waitPrev, waitNext *Handle
	// adopted: the pool counts the task among its running ones; false only
	// while an inline first step runs.
	adopted bool
	// stats: the spawner holds the handle and may read its figures (Spawn,
	// not Go).
	stats bool
	// invariants: Done was called (checked when invariants are on).
	ended atomic.Bool

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
		case statePolling:
			if h.noteWoken() {
				h.wakes.Add(1)
				return
			}
		case stateWaiting:
			h.p.wakeWaiting(h)
			return
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
		case statePolling:
			// Like a wake: the end of the step sees the cancel.
			if h.noteWoken() {
				return
			}
		case stateQueued, stateWaiting:
			if h.p.abort(h, err) {
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

// watch ends the task when its context ends while nobody steps it: queued
// (a deadline must hold while a read waits for a worker) or waiting. Called
// by the task's owner before it queues or parks the task, once.
func (h *Handle) watch() {
	if h.stopWatch == nil && h.ctx.Done() != nil {
		h.stopWatch = context.AfterFunc(h.ctx, func() { h.Cancel(h.ctx.Err()) })
	}
}

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

// Awaited is implemented by a task whose spawner blocks until its Done, as
// a Get's caller does. When a worker's step finishes such a task, the pool
// asks Waiting just before Done: true means the spawner is blocked now, so
// Done readies it — and Go runs a goroutine readied by a channel send on
// the sender's P, after the sender. The worker therefore gives its P up at
// once (runtime.Gosched), and the caller runs now instead of when the
// worker next yields, up to a quarter slice later (Stats.CallerHandoffs
// counts these). A false answer costs nothing: the worker goes on.
type Awaited interface {
	Waiting() bool
}

// A task's state is one atomic word (as in YATP): the task's generation in
// the high bits, its state in the low byte. This file holds every
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
//
// The generation makes handle reuse safe. The handles of Go tasks, which no
// spawner holds, are reused once their task has ended; whoever may still
// act on one later — a Waker kept by a producer, the context watch — holds
// the generation it was given, and every transition it asks for is a CAS
// on the whole word, so it fails on a handle that has moved on to another
// task. Nobody has to remember not to touch a recycled handle.
//
// The names are DESIGN.md's (YATP's) but for two: QUEUED is YATP's
// NOTIFIED (ready, waiting for a worker) and WAITING its IDLE (returned
// Pending, waiting for its waker); POLLING_WOKEN is what YATP records as
// NOTIFIED while a task is POLLING. POLLING and COMPLETED are the same.
const (
	stateQueued       uint64 = iota + 1 // YATP's NOTIFIED: in the queue, or held by it (0 is no state)
	statePolling                        // a step runs
	statePollingWoken                   // YATP's NOTIFIED while POLLING: woken or cancelled during the step; requeue or end after it
	stateWaiting                        // YATP's IDLE: returned Pending; waits for Wake
	stateCompleted                      // ended; wakes and cancels are no-ops

	stateBits = 8
	stateMask = 1<<stateBits - 1
)

// word is the state word of h's current task in state st.
func (h *Handle) word(st uint64) uint64 { return h.gen<<stateBits | st }

// take moves a popped task to POLLING. Under Pool.mu.
func (h *Handle) take() bool {
	return h.state.CompareAndSwap(h.word(stateQueued), h.word(statePolling))
}

// park moves a task whose step returned Pending to WAITING; false means it
// was woken during the step and must be requeued. Under Pool.mu.
func (h *Handle) park() bool {
	return h.state.CompareAndSwap(h.word(statePolling), h.word(stateWaiting))
}

// unpark moves generation gen's WAITING task to QUEUED for a Wake. Under
// Pool.mu.
func (h *Handle) unpark(gen uint64) bool {
	return h.state.CompareAndSwap(gen<<stateBits|stateWaiting, gen<<stateBits|stateQueued)
}

// requeue moves the stepping goroutine's task back to QUEUED after a
// Yield, or after a Pending whose wake came during the step. Under Pool.mu.
func (h *Handle) requeue() { h.state.Store(h.word(stateQueued)) }

// markCompleted marks a task the caller owns (POLLING, or inline) COMPLETED.
func (h *Handle) markCompleted() { h.state.Store(h.word(stateCompleted)) }

// abort moves generation gen's task from QUEUED or WAITING (from) to
// COMPLETED; false means it was not in that state. Under Pool.mu.
func (h *Handle) abort(gen, from uint64) bool {
	return h.state.CompareAndSwap(gen<<stateBits|from, gen<<stateBits|stateCompleted)
}

// noteWoken records a wake or cancel that arrives while generation gen's
// step runs, so the end of the step does not lose it. Lock-free.
func (h *Handle) noteWoken(gen uint64) bool {
	return h.state.CompareAndSwap(gen<<stateBits|statePolling, gen<<stateBits|statePollingWoken)
}

// Handle is a spawned task's identity: it wakes the task, cancels it and
// reports its statistics. A Handle returned by Spawn stays valid after the
// task completes (its methods are then no-ops or report final figures) and
// is never reused.
type Handle struct {
	state atomic.Uint64
	p     *Pool // fixed for the handle's life, reuse included
	// gen is the generation of the handle's current task; written by the
	// spawner before the handle is published and by the pool when it
	// recycles the handle, after every owner is done with it.
	gen uint64
	e   Entry
	t   Task
	ctx context.Context

	// cancel is the error a Cancel asked for, with the generation it was
	// meant for; checked before every step.
	cancel atomic.Pointer[cancelReq]
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
	// stepped: the task has taken a step.
	stepped bool
	// short: SpawnOptions.Short.
	short bool
	// stats: the spawner holds the handle (Spawn, not Go): it may read the
	// task's figures, and the handle is never recycled.
	stats bool
	// ended: Done was called (checked when invariants are on).
	ended atomic.Bool

	steps, yields, pendings, wakes atomic.Int64
	wait, exec                     atomic.Int64
	rows, bytes                    atomic.Int64
}

func newHandle(p *Pool) *Handle {
	h := &Handle{p: p}
	h.state.Store(h.word(statePolling))
	return h
}

type cancelReq struct {
	err error
	gen uint64
}

// Waker wakes one task — the one it was taken from, whatever happens to the
// handle after that task ends — when that task is Pending. Get it from
// StepContext.Waker and give it to whoever will produce the awaited event.
// The zero Waker does nothing.
type Waker struct {
	h   *Handle
	gen uint64
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
func (h *Handle) Wake() { Waker{h, h.gen}.Wake() }

// Wake makes the task ready again if it is Pending, and remembers the wake
// if its step is running; otherwise, and once the task has ended, it does
// nothing. Safe from any goroutine.
func (w Waker) Wake() {
	h := w.h
	if h == nil {
		return
	}
	for {
		v := h.state.Load()
		if v>>stateBits != w.gen {
			return // the task has ended and the handle moved on
		}
		switch v & stateMask {
		case statePolling:
			if h.noteWoken(w.gen) {
				h.noteWake()
				return
			}
		case stateWaiting:
			h.p.wakeWaiting(h, w.gen)
			return
		default:
			return
		}
	}
}

func (h *Handle) noteWake() {
	if h.stats {
		h.wakes.Add(1)
	}
}

// Cancel ends the task with err (context.Canceled when nil) at its next step
// boundary: at once when it is waiting or queued — Done then runs on the
// calling goroutine — or when its running step returns. The first Cancel's
// error wins; canceling a completed task is a no-op.
func (h *Handle) Cancel(err error) { h.cancelGen(h.gen, err) }

// cancelGen is Cancel of generation gen's task.
func (h *Handle) cancelGen(gen uint64, err error) {
	if err == nil {
		err = context.Canceled
	}
	req := &cancelReq{err: err, gen: gen}
	for {
		old := h.cancel.Load()
		if old != nil && old.gen == gen {
			err = old.err // the first cancel wins
			break
		}
		// Empty, or a request for an earlier task of this handle.
		if h.cancel.CompareAndSwap(old, req) {
			break
		}
	}
	for {
		v := h.state.Load()
		if v>>stateBits != gen {
			return
		}
		switch v & stateMask {
		case statePolling:
			// Like a wake: the end of the step sees the cancel.
			if h.noteWoken(gen) {
				return
			}
		case stateQueued, stateWaiting:
			if h.p.abort(h, gen, err) {
				return
			}
		default:
			return
		}
	}
}

// stopReason is why a task must not take another step, or nil.
func (h *Handle) stopReason() error {
	if c := h.cancel.Load(); c != nil && c.gen == h.gen {
		return c.err
	}
	return h.ctx.Err()
}

// watch ends the task when its context ends while nobody steps it: queued
// (a deadline must hold while a read waits for a worker) or waiting. Called
// by the task's owner before it queues or parks the task, once.
func (h *Handle) watch() {
	if ctx := h.ctx; h.stopWatch == nil && ctx.Done() != nil {
		gen := h.gen
		h.stopWatch = context.AfterFunc(ctx, func() { h.cancelGen(gen, ctx.Err()) })
	}
}

// recycle makes the handle of an ended Go task ready for another task. The
// caller is the pool's last owner of the task: Done has returned and the
// queue is done with the entry. A stale Waker or context watch may still
// look at the state word; the new generation makes it a no-op.
func (p *Pool) recycle(h *Handle) {
	if h.stats {
		return // the spawner holds it
	}
	h.gen++
	// The next owner is a spawner: POLLING, as Spawn starts every task.
	h.state.Store(h.word(statePolling))
	if invariants {
		h.ended.Store(false)
	}
	h.e, h.t, h.ctx, h.stopWatch, h.adopted, h.stepped = Entry{}, nil, nil, nil, false, false
	p.handles.Put(h)
}

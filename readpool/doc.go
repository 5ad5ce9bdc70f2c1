// Package readpool is coopkv's unified read pool: a bounded set of workers
// that run resumable tasks in short steps and pick the next ready task with
// a pluggable Queue — a multilevel feedback queue by default, FIFO as the
// baseline, or a priority queue for resource control.
//
// # Policy and concurrency
//
// The [Queue] owns every scheduling rule; the pool owns workers, locking,
// the clock and MaxTasks. The pool asks the queue whether an arriving task
// may run its first step at once ([Queue.MayInline]), reads the queue's
// [Preemption] hint once per unit of work (one atomic load: "more urgent
// work than your class waits, yield"), and lets the queue hold ready tasks
// back until a time it names ([Queue.Held]; a held task holds no worker and
// takes no room under MaxTasks). [EntryList] and [EntryHeap] are exported so
// that a queue can be written outside this package.
//
// The pool's own protocols take the same shape inside: slot lending, the
// caller hand-off, the long-step monitor and the held-task timer are each a
// type of their own, with the time passed in, that the pool composes (the
// comment on [Pool] says which file holds which).
//
// It knows nothing of Pebble or of the store above it; kv, scan and coproc
// express their reads as Tasks.
//
// # Tasks
//
// A Task's Step does a bounded amount of work, asking
// [StepContext.ShouldYield] before each unit, and reports [Ready], [Yield]
// (back in the queue at once) or [Pending] (waiting for [Handle.Wake]).
// Done is called exactly once when the task ends, with nil or the reason it
// was ended early, and must release what the task holds.
//
// Each task's state is one atomic word (QUEUED, POLLING, POLLING_WOKEN,
// WAITING, COMPLETED; every transition is in task.go): a wake during a step
// is never lost, a task is never stepped by two workers at once, and a wake
// after completion is a no-op. Every path that ends a task goes through one
// completion routine, and Done is the last thing the pool does with it.
//
// # Workers and the Go scheduler
//
// Workers share Go's scheduler with the embedding program. A worker that has
// run about a quarter of a time slice gives its P back with runtime.Gosched,
// between steps and inside ShouldYield, so the program's own goroutines do
// not wait for Go's 10 ms preemption; so does a step a scan's consumer runs
// itself ([Waker.StepHere]), and a demoted task's step (a runaway read
// cooled down) every quarter of that. Idle workers park; an idle pool burns
// no CPU.
//
// A step that ends a task whose spawner is blocked on it ([Awaited]) readies
// that goroutine on the worker's P, where it would wait for the worker's
// next Gosched. So the worker hands its P over at once while scans or
// coprocessor requests are live (their consumers wait in the same run
// queue), and otherwise, with only point reads about ([SpawnOptions.Short]),
// after the queued point reads of the next 50 µs: one hand-off then serves
// several callers of a closed loop.
//
// A caller that spawns with [SpawnOptions.Inline] runs the first step on its
// own goroutine when a worker is parked and nothing is queued, borrowing
// that worker's slot: no hand-off, nobody overtaken, and still at most
// Workers steps at once. [Waker.StepHere] does the same for a later step of
// a task that waits for a wake: the goroutine that would otherwise block
// until the task produced something (a scan's quick consumer) runs the step
// itself, if the queue, asked through Push and Pop, would run it now.
//
// # Steps blocked off the CPU
//
// Workers bound the steps on the CPU, not the reads in flight. A step about
// to block in a system call — a read from a slow disk — says so
// ([Pool.EnterBlocking], [Pool.ExitBlocking]; the store's filesystem does
// it for every table read while the disk is slow), and the pool lets one
// more step run meanwhile, on an extra worker or, for an Inline spawn, on
// the caller's goroutine. While reads block and tasks wait, a controller
// reads the process's CPU use every millisecond and lets a few more run
// while it is below 75% of GOMAXPROCS (cpu.go): a step whose read has
// returned still waits for a P, and counted as running it held a slot the
// CPU did not need. Options.MaxWorkers bounds them all. With no read
// blocked, Workers bounds the steps exactly, as before.
//
// # Overload, cancellation, failures
//
// At MaxTasks queued and running tasks Spawn fails with [ErrBusy]; Pending
// and held tasks do not count (tikv #18491). A task whose context is done
// is ended without running. Deadlines hold while a task waits: when the
// context of a queued, held or waiting task ends, the task is taken out of
// the queue and ended at once, without waiting for a worker (counted in
// Stats.Dropped while queued). One cancelled while it runs ends at its next
// step boundary. A panicking step ends its task with a [*PanicError]; the worker
// lives on. A step that runs longer than LongStep is noticed, and temporary
// extra workers (at most Workers at once) run the other tasks until it
// returns.
//
// # Close
//
// [Pool.Close] ends every task still accepted — queued, held, waiting or
// yielding — with [ErrClosed], waits for running steps, and leaves no
// goroutine behind.
//
// # Self-checks
//
// Under `go test -race` (or -tags invariants) the pool checks its own
// bookkeeping: no counter goes negative, every accepted task is completed
// exactly once, nothing is left after Close. Production builds compile the
// checks out.
package readpool

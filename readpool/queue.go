package readpool

import (
	"math"
	"sync/atomic"
	"time"
)

// Forever is the pool time after every other: Pop(Forever) returns held
// entries too. Close drains a queue with it.
const Forever = time.Duration(math.MaxInt64)

// Queue is a scheduling policy: it decides which ready task steps next,
// whether an arriving task may run its first step at once, which running
// steps should give way, and which tasks wait for a later time. The pool
// owns the concurrency — workers, locking, the clock, counting against
// MaxTasks — and the queue owns every rule about order.
//
// A Queue is a plain data structure: no goroutines, no clock of its own (the
// pool passes the time in), no locking. The pool serialises every call
// under its mutex but two: MayInline, which must be safe without it, and
// the Preemption hint, which the queue publishes and steps read.
//
// A task's life as the queue sees it:
//
//   - Push when it becomes ready (spawned, yielded or woken). The queue may
//     hold it back until a time of its choosing (a throttled group): held
//     entries are not in Len, hold no worker and do not count against
//     MaxTasks; Held reports them and when the first becomes ready, and the
//     pool calls Pop again then.
//   - Pop when a worker is free; Done after each step of a popped entry,
//     with the time the step ran.
//   - Remove when a queued or held task ends before a worker took it (its
//     context ended, it was cancelled); it gets no Done.
//   - MayInline when it arrives and a slot is free: true lets the caller run
//     the first step at once. If that step finishes the task the queue hears
//     no more of it; if the task goes on, Ran accounts the step as a Push
//     and Pop, then Done follows as usual.
//
// Containers for entries, EntryList and EntryHeap, are exported so that a
// Queue can be written outside this package.
type Queue interface {
	// MayInline reports whether e, arriving, may run its first step on the
	// caller's goroutine ahead of nothing (the pool asks when nothing is
	// queued, and for every Bypass). It sets e.Class when it says yes.
	// Called without the pool's lock, concurrently: it may read e and
	// atomics only.
	MayInline(e *Entry) bool
	// Push adds a ready entry, or holds it back.
	Push(e *Entry, now time.Duration)
	// Ran accounts a first step that ran inline and did not finish the
	// task, as a Push and a Pop of e at now.
	Ran(e *Entry, now time.Duration)
	// Pop removes and returns the entry to step next, nil when none is
	// ready at now. It sets the entry's Class.
	Pop(now time.Duration) *Entry
	// Remove takes out a queued or held entry; it reports false if e was
	// neither.
	Remove(e *Entry) bool
	// Done accounts a step of a popped (or Ran) entry.
	Done(e *Entry, elapsed, now time.Duration)
	// Len is the number of entries ready to pop.
	Len() int
	// Held is the number of entries held back, and the pool time at which
	// the first of them becomes ready (meaningless when n is 0).
	Held() (n int, until time.Duration)
	// Preemption is the queue's hint to running steps; the pool reads the
	// pointer once, at New.
	Preemption() *Preemption
	// Stats describes the queue; the pool adds it to its Stats.
	Stats() QueueStats
}

// Admitter is a Queue that gates admission itself — per class, per group —
// instead of the pool's one MaxTasks gate, so that a flooding tenant makes
// itself busy and not its neighbours (tikv #16049 gates per priority).
// Admit is asked under the pool's lock for each spawned task about to be
// queued, with the pool's MaxTasks; false fails the spawn with ErrBusy. A
// first step that runs inline is not asked: it runs only when nothing is
// queued.
type Admitter interface {
	Admit(e *Entry, maxTasks int) bool
}

// UrgentPopper is a Queue that can pop its urgent work alone: tasks a
// waiting caller wants within microseconds (the MLFQ: point reads,
// Entry.Short, that have not run yet). The pool's spare workers, which run
// beyond Workers, pop with it, so that they only ever run such steps —
// never a scan's.
type UrgentPopper interface {
	// PopUrgent is Pop restricted to urgent work: nil when none is ready at
	// now. It sets the entry's Class.
	PopUrgent(now time.Duration) *Entry
	// Urgent is the number of urgent entries ready to pop.
	Urgent() int
}

// Batcher is a Queue whose workers take work in batches, as YATP's do: a
// worker that popped first asks PopBatch for more, up to a few, takes them
// into its own local queue and steps them one after another without the
// pool's lock in between; an idle worker steals half of a busy one's local
// queue (see local.go). A task in a local queue has been popped: it is no
// longer in Len and its Done follows its step as usual. Batches trade the
// queue's order within a batch for one lock per batch: give only work
// whose steps are short. Spare workers neither take batches nor steal.
type Batcher interface {
	// PopBatch pops the next entry to step after first on the same
	// worker, or nil to take no more with it. It sets the entry's Class.
	PopBatch(first *Entry, now time.Duration) *Entry
}

// Kickable is implemented by a queue whose policy can change from outside
// the pool, such as a resource group's limit: New gives it Pool.Kick, to
// call after such a change so that tasks it holds back are looked at again
// at once rather than at the time the old policy named.
type Kickable interface {
	SetKick(kick func())
}

// NoPreemption is the Preemption value that asks no step to yield.
const NoPreemption = int64(math.MaxInt64)

// Preemption is the hint a queue publishes for running steps: a step whose
// Class is greater than the value yields at its next unit of work, so
// urgent work waits for one unit, not a whole slice. It is one atomic word,
// read without a lock once per unit; the queue stores it (under the pool's
// lock) whenever what waits changes. The zero value is not ready: use
// NewPreemption.
type Preemption struct {
	v atomic.Int64
}

// NewPreemption returns a hint that asks nothing.
func NewPreemption() *Preemption {
	p := &Preemption{}
	p.v.Store(NoPreemption)
	return p
}

// Set publishes that work of class c waits (NoPreemption: nothing does).
// It skips the store when the value is unchanged, so a busy queue does not
// keep invalidating the cache line every step reads.
func (p *Preemption) Set(c int64) {
	if p.v.Load() != c {
		p.v.Store(c)
	}
}

// Load returns the published class.
func (p *Preemption) Load() int64 { return p.v.Load() }

// QueueStats is a JSON-encodable digest of a queue.
type QueueStats struct {
	// Kind is "fifo", "mlfq", "priority" or a custom queue's name.
	Kind   string       `json:"kind"`
	Levels []LevelStats `json:"levels"`
	// Held is the number of entries held back until a later time.
	Held int `json:"held"`
	// Level0Share is the fraction of step time spent on level 0 so far.
	Level0Share float64 `json:"level0_share"`
	// Chance is the share of worker time level 0 is entitled to now, given
	// which levels have work (0.8 when all three do).
	Chance float64 `json:"chance"`
}

// LevelStats describes one level of a queue.
type LevelStats struct {
	Queued int           `json:"queued"`
	Steps  int64         `json:"steps"`
	Time   time.Duration `json:"time_ns"`
}

package readpool

import (
	"iter"
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

// Entry is a task as a Queue sees it. The pool owns entries; a queue holds
// one between Push and Pop (or Remove) and must not keep it after.
type Entry struct {
	// TaskID groups tasks into one MLFQ identity; 0 means the task alone.
	TaskID uint64
	// Fixed pins the task to FixedLevel instead of deriving its level.
	Fixed      bool
	FixedLevel int
	// Group is the task's resource group ("" without resource control).
	Group string
	// Priority is the spawner's priority value (SpawnOptions.Priority).
	Priority uint64
	// Short is SpawnOptions.Short: a point read, expected to end in its
	// first step.
	Short bool
	// Elapsed is the step time this task (not its id) has used so far.
	Elapsed time.Duration
	// Tag is the spawner's opaque extra (SpawnOptions.Tag), e.g. a
	// resource group resolved once at spawn.
	Tag any

	// Level is where the queue put the entry at its last Push (queues
	// without levels leave 0).
	Level int
	// Class is the urgency class of the entry's current step, set by the
	// queue at Pop, Ran or MayInline: lower is more urgent. A step yields
	// early when the queue's Preemption hint falls below its class.
	Class int64
	// Key orders the entry in an EntryHeap: lower first.
	Key uint64
	// QueueState is the queue's own, e.g. flags of what it has counted the
	// entry in; zero at spawn.
	QueueState uint64

	// Set by the pool when the entry is queued, for its wait time.
	enqueued time.Duration
	h        *Handle

	// Container links, owned by whichever EntryList or EntryHeap holds it.
	prev, next *Entry
	list       *EntryList
	heap       *EntryHeap
	index      int
	seq        uint64
}

// Queued reports whether e is in an EntryList or EntryHeap.
func (e *Entry) Queued() bool { return e.list != nil || e.heap != nil }

// Unlink takes e out of the EntryList or EntryHeap that holds it, and
// reports whether one did.
func (e *Entry) Unlink() bool {
	switch {
	case e.list != nil:
		e.list.Remove(e)
	case e.heap != nil:
		e.heap.Remove(e)
	default:
		return false
	}
	return true
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

// EntryList is an intrusive FIFO of entries: O(1) push, pop and remove, no
// allocation. The zero value is empty.
type EntryList struct {
	head, tail *Entry
	n          int
}

// Len is the number of entries.
func (l *EntryList) Len() int { return l.n }

// Push appends e, which must not be in a container.
func (l *EntryList) Push(e *Entry) {
	e.prev, e.next, e.list = l.tail, nil, l
	if l.tail == nil {
		l.head = e
	} else {
		l.tail.next = e
	}
	l.tail = e
	l.n++
}

// Front returns the first entry without removing it, or nil.
func (l *EntryList) Front() *Entry { return l.head }

// Pop removes and returns the first entry, or nil.
func (l *EntryList) Pop() *Entry {
	e := l.head
	if e != nil {
		l.Remove(e)
	}
	return e
}

// Remove takes e, which must be in l, out of it.
func (l *EntryList) Remove(e *Entry) {
	if e.prev == nil {
		l.head = e.next
	} else {
		e.prev.next = e.next
	}
	if e.next == nil {
		l.tail = e.prev
	} else {
		e.next.prev = e.prev
	}
	e.prev, e.next, e.list = nil, nil, nil
	l.n--
}

// EntryHeap is a min-heap of entries by Key, ties in push order, with
// O(log n) removal of any entry. The zero value is empty.
type EntryHeap struct {
	es  []*Entry
	seq uint64
}

// Len is the number of entries.
func (h *EntryHeap) Len() int { return len(h.es) }

// Push adds e, which must not be in a container, by its Key.
func (h *EntryHeap) Push(e *Entry) {
	h.seq++
	e.seq, e.heap, e.index = h.seq, h, len(h.es)
	h.es = append(h.es, e)
	h.up(e.index)
}

// Min returns the entry Pop would return, or nil.
func (h *EntryHeap) Min() *Entry {
	if len(h.es) == 0 {
		return nil
	}
	return h.es[0]
}

// All yields the entries in no particular order; the heap must not change
// meanwhile.
func (h *EntryHeap) All() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		for _, e := range h.es {
			if !yield(e) {
				return
			}
		}
	}
}

// Pop removes and returns the entry with the lowest Key, or nil.
func (h *EntryHeap) Pop() *Entry {
	e := h.Min()
	if e != nil {
		h.Remove(e)
	}
	return e
}

// Remove takes e, which must be in h, out of it.
func (h *EntryHeap) Remove(e *Entry) {
	i, n := e.index, len(h.es)-1
	if i != n {
		h.swap(i, n)
	}
	h.es[n] = nil
	h.es = h.es[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	e.heap, e.index = nil, -1
}

func (h *EntryHeap) less(i, j int) bool {
	a, b := h.es[i], h.es[j]
	if a.Key != b.Key {
		return a.Key < b.Key
	}
	return a.seq < b.seq
}

func (h *EntryHeap) swap(i, j int) {
	h.es[i], h.es[j] = h.es[j], h.es[i]
	h.es[i].index, h.es[j].index = i, j
}

func (h *EntryHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sifts i down and reports whether it moved.
func (h *EntryHeap) down(i int) bool {
	start, n := i, len(h.es)
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			return i != start
		}
		h.swap(i, m)
		i = m
	}
}

// FIFO runs tasks in arrival order. It exists to be measured against.
type FIFO struct {
	l     EntryList
	pre   *Preemption
	steps int64
	time  time.Duration
}

// NewFIFO returns an empty FIFO queue.
func NewFIFO() *FIFO { return &FIFO{pre: NewPreemption()} }

// MayInline implements Queue: always, since the pool asks only when
// nothing is queued, so nobody is overtaken.
func (q *FIFO) MayInline(e *Entry) bool { e.Class = 0; return true }

// Push implements Queue.
func (q *FIFO) Push(e *Entry, _ time.Duration) { e.Level = 0; q.l.Push(e) }

// Ran implements Queue.
func (q *FIFO) Ran(e *Entry, _ time.Duration) { e.Class = 0 }

// Pop implements Queue.
func (q *FIFO) Pop(time.Duration) *Entry {
	e := q.l.Pop()
	if e != nil {
		e.Class = 0
	}
	return e
}

// Remove implements Queue.
func (q *FIFO) Remove(e *Entry) bool { return e.list == &q.l && e.Unlink() }

// Done implements Queue.
func (q *FIFO) Done(_ *Entry, elapsed, _ time.Duration) {
	q.steps++
	q.time += elapsed
}

// Len implements Queue.
func (q *FIFO) Len() int { return q.l.n }

// Held implements Queue: a FIFO holds nothing back.
func (q *FIFO) Held() (int, time.Duration) { return 0, 0 }

// Preemption implements Queue: nothing in a FIFO overtakes a running step.
func (q *FIFO) Preemption() *Preemption { return q.pre }

// Stats implements Queue.
func (q *FIFO) Stats() QueueStats {
	return QueueStats{
		Kind:        "fifo",
		Levels:      []LevelStats{{Queued: q.l.n, Steps: q.steps, Time: q.time}},
		Level0Share: 1,
		Chance:      1,
	}
}

// WorkStealing is YATP's single-level queue: tasks spawned or requeued
// enter one shared FIFO (YATP's injector), and a worker takes up to a
// batch of them at a time into its own local queue, steps that first, and
// steals half of another worker's local queue when the shared one is empty
// (Batcher; see local.go). Like FIFO it knows no levels or priorities: it
// exists to measure the cost of dispatch against FIFO and a channel, the
// shape the MLFQ carries for its point reads.
type WorkStealing struct {
	FIFO
}

// NewWorkStealing returns an empty work-stealing queue.
func NewWorkStealing() *WorkStealing { return &WorkStealing{FIFO: FIFO{pre: NewPreemption()}} }

// PopBatch implements Batcher: the next entry in arrival order, whatever
// it is.
func (q *WorkStealing) PopBatch(_ *Entry, now time.Duration) *Entry { return q.Pop(now) }

// Stats implements Queue.
func (q *WorkStealing) Stats() QueueStats {
	s := q.FIFO.Stats()
	s.Kind = "work-stealing"
	return s
}

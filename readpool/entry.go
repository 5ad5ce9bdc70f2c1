package readpool

import (
	"iter"
	"time"
)

// An Entry is a task as a queue sees it, and EntryList and EntryHeap the
// containers queues keep entries in, exported so that a Queue can be
// written outside this package.

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
	// Rows is the rows its steps charged so far (StepContext.Charge).
	Rows int64
	// Demoted runs the task at the queue's lowest priority (a Governor's
	// Verdict.Demote): the MLFQ's last level, resource control's low class.
	Demoted bool
	// Origin is what the task reads first (SpawnOptions.Origin), for a
	// Governor to name it by: the spawner's bytes, valid for the task's
	// life; not to be kept after it.
	Origin []byte
	// Governed is the Governor's own state of the task
	// (SpawnOptions.Governed at spawn).
	Governed any
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
	// maxWait is SpawnOptions.MaxQueueWait, estimate the wait the pool
	// estimated at spawn: kept to count how often it was right.
	maxWait, estimate time.Duration
	h                 *Handle
	// cooledSlot: the entry holds one of the pool's slots for demoted
	// tasks (cooled.go).
	cooledSlot bool

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

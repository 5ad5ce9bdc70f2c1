package readpool

import (
	"container/heap"
	"time"
)

// PriorityFunc computes an entry's priority when it enters the queue; lower
// runs first. Resource control supplies one that reads the group's virtual
// time, so a group's tasks are re-ranked after every step.
type PriorityFunc func(e *Entry) uint64

// PriorityQueue runs the entry with the lowest priority value first, ties in
// arrival order. With a PriorityFunc the value is recomputed at every Push;
// without one, Entry.Priority is used as given.
type PriorityQueue struct {
	h     entryHeap
	prio  PriorityFunc
	seq   uint64
	steps int64
	time  time.Duration
}

// NewPriorityQueue returns an empty priority queue; prio may be nil.
func NewPriorityQueue(prio PriorityFunc) *PriorityQueue {
	return &PriorityQueue{prio: prio}
}

// Push implements Queue.
func (q *PriorityQueue) Push(e *Entry, _ time.Duration) {
	if q.prio != nil {
		e.Priority = q.prio(e)
	}
	q.seq++
	e.seq = q.seq
	e.Level = 0
	heap.Push(&q.h, e)
}

// Pop implements Queue.
func (q *PriorityQueue) Pop(time.Duration) *Entry {
	if len(q.h) == 0 {
		return nil
	}
	return heap.Pop(&q.h).(*Entry)
}

// Ran implements Queue.
func (q *PriorityQueue) Ran(*Entry, time.Duration) {}

// Done implements Queue.
func (q *PriorityQueue) Done(_ *Entry, elapsed, _ time.Duration) {
	q.steps++
	q.time += elapsed
}

// Len implements Queue.
func (q *PriorityQueue) Len() int { return len(q.h) }

// Stats implements Queue.
func (q *PriorityQueue) Stats() QueueStats {
	return QueueStats{
		Kind:        "priority",
		Levels:      []LevelStats{{Queued: len(q.h), Steps: q.steps, Time: q.time}},
		Level0Share: 1,
		Chance:      1,
	}
}

type entryHeap []*Entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if h[i].Priority != h[j].Priority {
		return h[i].Priority < h[j].Priority
	}
	return h[i].seq < h[j].seq
}
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *entryHeap) Push(x any) {
	e := x.(*Entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.index = -1
	*h = old[:n-1]
	return e
}

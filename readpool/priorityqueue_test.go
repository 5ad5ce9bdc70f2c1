package readpool

import "time"

// PriorityFunc computes an entry's priority when it enters the queue; lower
// runs first. Resource control supplies one that reads the group's virtual
// time, so a group's tasks are re-ranked every time they are queued.
type PriorityFunc func(e *Entry) uint64

// PriorityQueue is a test queue: it runs the entry with the lowest priority
// value first, ties in arrival order, so that the pool's tests can order
// tasks as they please (resource control's queue is resource.Scheduler). With a PriorityFunc the value is recomputed at every Push;
// without one, Entry.Priority is used as given. It never preempts and never
// holds entries back; resource control builds its own queue for that.
type PriorityQueue struct {
	h     EntryHeap
	prio  PriorityFunc
	pre   *Preemption
	steps int64
	time  time.Duration
}

// NewPriorityQueue returns an empty priority queue; prio may be nil.
func NewPriorityQueue(prio PriorityFunc) *PriorityQueue {
	return &PriorityQueue{prio: prio, pre: NewPreemption()}
}

// MayInline implements Queue: the pool asks only when nothing is queued,
// so nothing of a lower value waits.
func (q *PriorityQueue) MayInline(e *Entry) bool { e.Class = 0; return true }

// Push implements Queue.
func (q *PriorityQueue) Push(e *Entry, _ time.Duration) {
	e.Key = e.Priority
	if q.prio != nil {
		e.Key = q.prio(e)
	}
	e.Level = 0
	q.h.Push(e)
}

// Ran implements Queue.
func (q *PriorityQueue) Ran(e *Entry, _ time.Duration) { e.Class = 0 }

// Pop implements Queue.
func (q *PriorityQueue) Pop(time.Duration) *Entry {
	e := q.h.Pop()
	if e != nil {
		e.Class = 0
	}
	return e
}

// Remove implements Queue.
func (q *PriorityQueue) Remove(e *Entry) bool { return e.heap == &q.h && e.Unlink() }

// Done implements Queue.
func (q *PriorityQueue) Done(_ *Entry, elapsed, _ time.Duration) {
	q.steps++
	q.time += elapsed
}

// Len implements Queue.
func (q *PriorityQueue) Len() int { return q.h.Len() }

// Held implements Queue.
func (q *PriorityQueue) Held() (int, time.Duration) { return 0, 0 }

// Preemption implements Queue.
func (q *PriorityQueue) Preemption() *Preemption { return q.pre }

// Stats implements Queue.
func (q *PriorityQueue) Stats() QueueStats {
	return QueueStats{
		Kind:        "priority",
		Levels:      []LevelStats{{Queued: q.h.Len(), Steps: q.steps, Time: q.time}},
		Level0Share: 1,
		Chance:      1,
	}
}

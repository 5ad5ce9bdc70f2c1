package readpool

import (
	"time"
)

// The two plain queues the MLFQ is measured against.

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

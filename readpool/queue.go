package readpool

import "time"

// Queue is a scheduling policy: it orders the ready tasks of a pool. A Queue
// is a plain data structure — no goroutines, no locks, no clock of its own
// (the pool passes the time in) — so it is tested by feeding it entries.
// The pool serialises every call under its own mutex.
//
// The pool calls Push when a task becomes ready (spawned, yielded or woken),
// Pop when a worker wants the next one, and Done after each step of a
// popped entry, with the time the step ran. Every popped entry gets exactly
// one Done, also when the pool drops it without stepping (elapsed 0).
//
// A first step run inline on a caller's goroutine never passes through the
// queue; if the task goes on, the pool calls Ran for that step, which
// stands for a Push and Pop of e, and then Done as usual.
type Queue interface {
	Push(e *Entry, now time.Duration)
	Pop(now time.Duration) *Entry
	Ran(e *Entry, now time.Duration)
	Done(e *Entry, elapsed, now time.Duration)
	// Len is the number of entries queued (not those popped and running).
	Len() int
	// Stats describes the queue's levels; the pool adds it to its Stats.
	Stats() QueueStats
}

// Entry is a task as a Queue sees it: its scheduling extras and the links
// queues use to hold it without allocating. The pool owns entries; a queue
// must not keep one after popping it.
type Entry struct {
	// TaskID groups tasks into one MLFQ identity; 0 means the task alone.
	TaskID uint64
	// Fixed pins the task to FixedLevel instead of deriving its level.
	Fixed      bool
	FixedLevel int
	// Group is the task's resource group ("" without resource control).
	Group string
	// Priority orders a priority queue: lower runs first.
	Priority uint64
	// Elapsed is the step time this task (not its id) has used so far.
	Elapsed time.Duration

	// Level is the level the queue put the entry in at its last Push.
	Level int

	h        *Handle
	next     *Entry // intrusive FIFO link
	enqueued time.Duration
	runLevel int           // MLFQ: the level the entry was popped from
	attained time.Duration // MLFQ: its identity's time at its last Push
	seq      uint64        // priority-queue tie breaker: arrival order
	index    int           // priority-queue heap index
}

// QueueStats is a JSON-encodable digest of a queue.
type QueueStats struct {
	// Kind is "fifo", "mlfq" or "priority".
	Kind   string       `json:"kind"`
	Levels []LevelStats `json:"levels"`
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

// list is an intrusive FIFO of entries.
type list struct {
	head, tail *Entry
	n          int
}

func (l *list) push(e *Entry) {
	e.next = nil
	if l.tail == nil {
		l.head = e
	} else {
		l.tail.next = e
	}
	l.tail = e
	l.n++
}

func (l *list) pop() *Entry {
	e := l.head
	if e == nil {
		return nil
	}
	l.head = e.next
	if l.head == nil {
		l.tail = nil
	}
	e.next = nil
	l.n--
	return e
}

// FIFO runs tasks in arrival order. It exists to be measured against.
type FIFO struct {
	l     list
	steps int64
	time  time.Duration
}

// NewFIFO returns an empty FIFO queue.
func NewFIFO() *FIFO { return &FIFO{} }

// Push implements Queue.
func (q *FIFO) Push(e *Entry, _ time.Duration) { e.Level = 0; q.l.push(e) }

// Pop implements Queue.
func (q *FIFO) Pop(time.Duration) *Entry { return q.l.pop() }

// Ran implements Queue.
func (q *FIFO) Ran(*Entry, time.Duration) {}

// Done implements Queue.
func (q *FIFO) Done(_ *Entry, elapsed, _ time.Duration) {
	q.steps++
	q.time += elapsed
}

// Len implements Queue.
func (q *FIFO) Len() int { return q.l.n }

// Stats implements Queue.
func (q *FIFO) Stats() QueueStats {
	return QueueStats{
		Kind:        "fifo",
		Levels:      []LevelStats{{Queued: q.l.n, Steps: q.steps, Time: q.time}},
		Level0Share: 1,
		Chance:      1,
	}
}

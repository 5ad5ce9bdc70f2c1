package scan

import (
	"runtime"
	"sync"
	"time"

	"github.com/coopkv/coopkv/readpool"
)

// DefaultBuffer is the number of batches a Stream holds by default: one
// being read while the next is filled.
const DefaultBuffer = 2

// Stream is the bounded buffer between a scan task and its consumer. It has
// N slots; a batch holds one from the moment the task reserves it (before
// reading) until the consumer moves past it. The consumer is one goroutine.
type stream struct {
	mu          sync.Mutex
	slots       int
	held        int // reserved slots: filling, ready, or being read
	maxHeld     int
	ready       []*Batch
	free        []*Batch
	done        bool
	err         error
	taskWaiting readpool.Waker // the task, parked for want of a slot
	hasWaiting  bool
	waiting     bool          // the consumer waits for a batch
	notify      chan struct{} // capacity 1
	finished    chan struct{} // closed when the task has ended
	// Touched only by the consumer: when Next last returned a batch (zero
	// if it did not), to tell how long the consumer spends on one.
	returned time.Time
}

// pullBelow is the consumer time per batch under which a Stream leaves its
// task waiting for the consumer to step it itself (readpool's StepHere)
// rather than waking it for a worker to fill the free slot meanwhile. A
// hand-off between goroutines — a futex wake, a trip through a run queue —
// costs 5–20 µs on the machines we measure; overlapping a consumer that
// spends less than that on its rows gains less than the hand-off costs.
const pullBelow = 16 * time.Microsecond

// NewStream returns a stream of n slots (DefaultBuffer when n <= 0).
func newStream(n int) *stream {
	if n <= 0 {
		n = DefaultBuffer
	}
	return &stream{slots: n, notify: make(chan struct{}, 1), finished: make(chan struct{})}
}

// StreamStats describes a stream's buffering.
type streamStats struct {
	Slots   int `json:"slots"`
	Held    int `json:"held"`     // batches held now
	MaxHeld int `json:"max_held"` // the most ever held at once
}

// Stats returns the stream's buffering figures.
func (s *stream) Stats() streamStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return streamStats{Slots: s.slots, Held: s.held, MaxHeld: s.maxHeld}
}

// reserve takes a free slot and a batch for it, or, with none free, records
// that the task waits and returns nil: the task then returns Pending, and
// the consumer's release wakes it (a wake during the step is kept).
func (s *stream) reserve(sc *readpool.StepContext) *Batch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held >= s.slots {
		s.taskWaiting, s.hasWaiting = sc.Waker(), true
		return nil
	}
	s.held++
	s.maxHeld = max(s.maxHeld, s.held)
	if n := len(s.free); n > 0 {
		b := s.free[n-1]
		s.free = s.free[:n-1]
		return b
	}
	return batches.Get().(*Batch)
}

// batches recycles the batches of streams read to their end, so that a
// short scan — a few rows, one batch — allocates no buffer. A batch is put
// back only by its stream's consumer, once the stream has ended: nobody
// else can hold it then (see Next).
var batches = sync.Pool{New: func() any { return new(Batch) }}

// unreserve gives back a slot that produced nothing.
func (s *stream) unreserve(b *Batch) {
	s.mu.Lock()
	s.held--
	s.free = append(s.free, b)
	s.mu.Unlock()
}

// publish hands a filled batch to the consumer.
func (s *stream) publish(b *Batch) {
	s.mu.Lock()
	s.ready = append(s.ready, b)
	wake := s.waiting
	s.waiting = false
	s.mu.Unlock()
	if wake {
		s.signal()
	}
}

func (s *stream) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// finish records the end of the task; err is nil for a complete scan.
func (s *stream) finish(err error) {
	s.mu.Lock()
	s.done = true
	s.err = err
	s.waiting = false
	s.mu.Unlock()
	close(s.finished)
	s.signal()
}

// Next releases prev (the batch the consumer is done with; nil at first),
// then returns the next batch, waiting for the task to produce it. At the
// end it returns nil and the scan's error, nil for a complete scan.
//
// A task waiting for the released slot is woken to fill it while the
// consumer reads the next batch — unless the consumer is quick (under
// pullBelow a batch): then the wake waits until the consumer has nothing
// left to read, and the consumer steps the task itself when the pool has
// a worker idle and nothing queued, so that a fast reader pays for no
// hand-off at all.
func (s *stream) Next(prev *Batch) (*Batch, error) {
	b, err := s.next(prev)
	if b != nil && b.cooled {
		// A read in cooldown: its consumer — the program's goroutine that
		// reads the rows — gives its P back at each of its small batches.
		// Otherwise it reads batch after batch without a scheduling point
		// while a worker fills them, and Go preempts it only every 10 ms,
		// which the program's goroutines beside it wait out for a P
		// (cmd/kvbench's README, The pool's constants).
		runtime.Gosched()
	}
	return b, err
}

// next is Next without the cooled-down read's hand-back.
func (s *stream) next(prev *Batch) (*Batch, error) {
	var now time.Time
	s.mu.Lock()
	if prev != nil {
		s.held--
		s.free = append(s.free, prev)
		if s.hasWaiting && len(s.ready) > 0 {
			if !s.returned.IsZero() {
				now = time.Now()
				if now.Sub(s.returned) < pullBelow {
					// Keep the wake for later: see below.
					return s.take(now)
				}
			}
			s.wakeTask()
		}
	}
	if len(s.ready) == 0 && s.hasWaiting {
		// The wake kept above: step the task here if the pool lets us.
		w := s.taskWaiting
		s.taskWaiting, s.hasWaiting = readpool.Waker{}, false
		s.mu.Unlock()
		if !w.StepHere() {
			w.Wake()
		}
		s.mu.Lock()
	}
	waited := false
	for len(s.ready) == 0 && !s.done {
		s.waiting, waited = true, true
		s.mu.Unlock()
		<-s.notify // spurious wake-ups are fine: the loop looks again
		s.mu.Lock()
	}
	if now.IsZero() || waited {
		now = time.Now()
	}
	return s.take(now)
}

// wakeTask wakes the task waiting for a slot. Called and returns with mu
// held, which it drops for the wake.
func (s *stream) wakeTask() {
	w := s.taskWaiting
	s.taskWaiting, s.hasWaiting = readpool.Waker{}, false
	s.mu.Unlock()
	w.Wake()
	s.mu.Lock()
}

// take returns the first ready batch, or nil and the scan's error at the
// end, and releases mu.
func (s *stream) take(now time.Time) (*Batch, error) {
	defer s.mu.Unlock()
	if len(s.ready) > 0 {
		b := s.ready[0]
		s.ready[0] = nil
		s.ready = s.ready[1:]
		s.returned = now
		return b, nil
	}
	s.returned = time.Time{}
	if s.done {
		// The task has ended and will not touch a batch again, and the
		// consumer, asking for the next batch, is done with the last one:
		// every batch is free.
		for _, b := range s.free {
			batches.Put(b)
		}
		clear(s.free)
		s.free = s.free[:0]
	}
	return nil, s.err
}

// Finished is closed once the task has ended and released its iterator.
func (s *stream) Finished() <-chan struct{} { return s.finished }

package scan

import (
	"github.com/coopkv/coopkv/readpool"
)

// Task is a scan as a read-pool task: it steps a Cursor and streams its
// batches through a Stream.
type task struct {
	c   *Cursor
	s   *stream
	err error // a read error, delivered when the task ends
}

// NewTask returns a task that reads c into s. The task owns c: it closes it
// when it ends, however it ends.
func newTask(c *Cursor, s *stream) *task { return &task{c: c, s: s} }

// Step implements readpool.Task: before each batch it asks whether to
// yield, then reserves a slot, and only then reads.
func (t *task) Step(sc *readpool.StepContext) readpool.Status {
	for {
		if sc.ShouldYield() {
			return readpool.Yield
		}
		b := t.s.reserve(sc)
		if b == nil {
			return readpool.Pending
		}
		// A batch ends early when urgent work waits (a Get queued behind
		// this step): it then waits for 64 rows, not up to 1,024. So does
		// one that outlives the step's slice on a slow disk (Overdue).
		// A read in cooldown fills small batches, and its consumer gives
		// its P back at each (stream.Next).
		b.cooled = sc.Demoted()
		t.c.cap = 0
		if b.cooled {
			t.c.cap = CooledBatchRows
		}
		rows, bytes, err := t.c.fillUnless(b, unitEnd{sc})
		sc.Charge(rows, bytes)
		if err != nil {
			t.s.unreserve(b)
			t.err = err
			return readpool.Ready
		}
		if b.Len() > 0 {
			t.s.publish(b)
		} else {
			t.s.unreserve(b)
		}
		if t.c.Done() {
			return readpool.Ready
		}
	}
}

// Waiting implements readpool.Awaited: whether the consumer waits for a
// batch, so that the worker whose step ends the scan gives it its P.
func (t *task) Waiting() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.waiting
}

// Done implements readpool.Task: it closes the iterator and ends the stream
// with the scan's error, or with err when the pool ended the task early.
func (t *task) Done(err error) {
	if cerr := t.c.Close(); cerr != nil && t.err == nil {
		t.err = cerr
	}
	if err == nil {
		err = t.err
	}
	t.s.finish(err)
}

// unitEnd ends a batch early when its step is overdue.
type unitEnd struct{ sc *readpool.StepContext }

func (u unitEnd) Preempted() bool { return u.sc.Overdue() }

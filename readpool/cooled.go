package readpool

import "time"

// Cooled caps how many demoted tasks (Entry.Demoted: runaway reads in
// cooldown) a queue has ready or running at once. The lowest priority alone
// does not keep a cooled-down read from the CPU: while nothing else is
// queued it takes every worker, and the program's own goroutines that want
// a P beside it — request handlers, Gets answered from the row cache on
// their callers — wait for Go's scheduler to rotate through the workers,
// longer the more workers cooled-down reads hold (cmd/kvbench's README,
// The pool's constants). So a cooled-down read also gets at most a few
// workers: a demoted entry takes a slot to be
// queued; without one it waits here, held back (Queue.Held), and the
// demoted entries take turns at the slots in arrival order.
//
// Cooled is a policy a Queue embeds, with no time in it: the queue calls
// Push for each entry it is given, Done after each step, Remove for each
// entry it is asked to remove, and queues as it would any ready entry what
// they hand back. A slot is held from the entry's Push to the Done (or
// Remove) after which it is not queued again.
type Cooled struct {
	max     int       // slots; 0 = no cap
	slots   int       // demoted entries holding a slot: ready or running
	waiting EntryList // demoted entries without one, in arrival order
}

// NewCooled returns a cap of max slots; max 0 caps nothing.
func NewCooled(max int) Cooled { return Cooled{max: max} }

// Push takes e as the queue is given it and says what to queue now: e
// itself (queue), and another entry that has just got a slot (next, nil
// for none). An entry that is not demoted is queued; if it held a slot (the
// rule that cooled it down was lifted) the slot passes on. A demoted entry
// is queued when it holds a slot and nobody waits, or gets a free one;
// when it held one and others wait, its turn is over: it waits behind
// them and the first of them gets the slot; else it waits.
func (c *Cooled) Push(e *Entry) (queue bool, next *Entry) {
	switch {
	case c.max == 0:
		return true, nil
	case !e.Demoted && e.cooledSlot:
		return true, c.release(e)
	case !e.Demoted:
		return true, nil
	case e.cooledSlot && c.waiting.Len() == 0:
		return true, nil
	case e.cooledSlot:
		next = c.release(e)
		c.waiting.Push(e)
		return false, next
	case c.slots < c.max:
		e.cooledSlot = true
		c.slots++
		return true, nil
	}
	c.waiting.Push(e)
	return false, nil
}

// Done accounts a step of e: when e holds a slot and was not queued again
// (it finished or waits for a wake), the slot goes to the first waiting
// entry, which is returned for the queue to queue.
func (c *Cooled) Done(e *Entry) *Entry {
	if !e.cooledSlot || e.Queued() {
		return nil
	}
	return c.release(e)
}

// Remove takes e out: out of the waiting entries (reported by ok), or, when
// the queue removed a ready e that held a slot, passes the slot on (next).
func (c *Cooled) Remove(e *Entry) (next *Entry, ok bool) {
	if e.list == &c.waiting {
		c.waiting.Remove(e)
		return nil, true
	}
	if e.cooledSlot {
		return c.release(e), false
	}
	return nil, false
}

// release frees e's slot and gives it to the first waiting entry, if any,
// which it returns.
func (c *Cooled) release(e *Entry) *Entry {
	e.cooledSlot = false
	c.slots--
	next := c.waiting.Pop()
	if next != nil {
		next.cooledSlot = true
		c.slots++
	}
	return next
}

// Waiting is the number of demoted entries waiting for a slot: held back,
// for the queue's Held.
func (c *Cooled) Waiting() int { return c.waiting.Len() }

// Drain returns the next waiting entry, slot or not, for a queue's
// Pop(Forever): Close takes every task.
func (c *Cooled) Drain() *Entry { return c.waiting.Pop() }

// CooledRecheck is how soon a queue with demoted tasks waiting for a slot
// asks the pool to look again at the latest (Queue.Held): a backstop, since
// a worker pops after the Done that frees a slot, and the pool wakes one
// after a step run off the workers.
const CooledRecheck = 10 * time.Millisecond

package readpool

import "time"

// Cooldown: everything the pool does with a demoted task (Entry.Demoted, a
// runaway read in cooldown) is in this file, around whatever Queue it runs.
//
//   - It runs at the queue's lowest priority: the queue's own rule (the
//     MLFQ's last level, the resource scheduler's low class).
//   - It never runs inline, nor is a row-cache hit of it served on its
//     caller (MayInline: no).
//   - At most Options.CooledSlots of them are ready or running at once
//     (cooledQueue). The lowest priority alone does not keep a cooled-down
//     read from the CPU: while nothing else is queued it takes every
//     worker, and the program's own goroutines that want a P beside it —
//     request handlers, Gets answered from the row cache on their callers
//     — wait for Go's scheduler to rotate through the workers, longer the
//     more workers cooled-down reads hold (cmd/kvbench's README, The
//     pool's constants). A demoted entry takes a slot to be queued; without
//     one it waits here, held back (Queue.Held), and the demoted entries
//     take turns at the slots in arrival order.
//   - Its steps give their P back to Go's scheduler demotedGoschedDiv
//     times as often (StepContext.ShouldYield), and a task that reads in
//     units makes them small (StepContext.Demoted: a scan's batches of
//     CooledBatchRows in package scan).

// demotedGoschedDiv divides the time a demoted task's step keeps its P
// between hand-backs to Go's scheduler: lowest priority in the pool's
// queue, and at Go's scheduler too, so that the program's goroutines that
// want a P beside it wait less for one. A Gosched costs well under a
// microsecond, so the step pays little for it.
const demotedGoschedDiv = 4

// cooledRecheck is how soon the pool looks again at the demoted tasks
// waiting for a cooled slot (Queue.Held): a backstop, since a worker pops
// after the Done that frees a slot, and the pool wakes one after a step run
// off the workers.
const cooledRecheck = 10 * time.Millisecond

// OutsideHolder is an optional Queue capability: a queue that counts the
// entries the pool holds back outside it — demoted ones waiting for a
// cooled slot — among its own held ones, as the resource scheduler counts
// them in their group's occupancy, which its admission reads. HoldOutside
// is called when e starts waiting, before any Push of it; ReleaseOutside
// when it stops: with removed, it is gone (Queue.Remove's case), else it
// is about to be pushed.
type OutsideHolder interface {
	HoldOutside(e *Entry)
	ReleaseOutside(e *Entry, removed bool)
}

// cooledQueue is the pool's Queue: q, with the demoted entries beyond the
// cooled slots held back. Every call into q goes through it, under the
// pool's lock as q's do.
type cooledQueue struct {
	Queue
	out  OutsideHolder // q's, or nil
	cool cooledSlots
	now  time.Duration // the latest time the pool passed in
}

// WithCooldown returns q inside the cooldown a pool puts around its Queue
// (Options.CooledSlots: at most slots demoted entries ready or running at
// once; 0 caps nothing), to drive a Queue as the pool would without a
// pool: the resource scheduler's scripts do.
func WithCooldown(q Queue, slots int) Queue { return newCooledQueue(q, slots) }

// newCooledQueue wraps q with max cooled slots; 0 caps nothing.
func newCooledQueue(q Queue, max int) *cooledQueue {
	c := &cooledQueue{Queue: q, cool: cooledSlots{max: max}}
	c.out, _ = q.(OutsideHolder)
	return c
}

// tick notes the pool's time now (Forever is not a time).
func (c *cooledQueue) tick(now time.Duration) {
	if now != Forever {
		c.now = max(c.now, now)
	}
}

// MayInline implements Queue: never a demoted entry, else q's answer.
func (c *cooledQueue) MayInline(e *Entry) bool { return !e.Demoted && c.Queue.MayInline(e) }

// Push implements Queue: e is queued, or waits for a slot.
func (c *cooledQueue) Push(e *Entry, now time.Duration) {
	c.tick(now)
	queue, next := c.cool.push(e)
	if next != nil {
		c.unhold(next, now)
	}
	if queue {
		c.Queue.Push(e, now)
		return
	}
	if c.out != nil {
		c.out.HoldOutside(e)
	}
}

// unhold queues next, which has just got a slot.
func (c *cooledQueue) unhold(next *Entry, now time.Duration) {
	if c.out != nil {
		c.out.ReleaseOutside(next, false)
	}
	c.Queue.Push(next, now)
}

// Pop implements Queue. Pop(Forever), Close's drain, takes the entries
// waiting for a slot too, last.
func (c *cooledQueue) Pop(now time.Duration) *Entry {
	c.tick(now)
	e := c.Queue.Pop(now)
	if e != nil || now != Forever {
		return e
	}
	next := c.cool.drain()
	if next == nil {
		return nil
	}
	c.unhold(next, c.now)
	return c.Queue.Pop(Forever)
}

// Remove implements Queue.
func (c *cooledQueue) Remove(e *Entry) bool {
	next, waited := c.cool.remove(e)
	if waited {
		if c.out != nil {
			c.out.ReleaseOutside(e, true)
		}
		return true
	}
	ok := c.Queue.Remove(e)
	if next != nil {
		c.unhold(next, c.now)
	}
	return ok
}

// Done implements Queue: a slot e gave up goes to the first waiting entry.
func (c *cooledQueue) Done(e *Entry, elapsed, now time.Duration) {
	c.tick(now)
	c.Queue.Done(e, elapsed, now)
	if next := c.cool.done(e); next != nil {
		c.unhold(next, now)
	}
}

// Held implements Queue: q's held entries and those waiting for a slot.
func (c *cooledQueue) Held() (int, time.Duration) {
	n, until := c.Queue.Held()
	if w := c.cool.waiting.Len(); w > 0 {
		if recheck := c.now + cooledRecheck; n == 0 || recheck < until {
			until = recheck
		}
		n += w
	}
	return n, until
}

// Stats implements Queue.
func (c *cooledQueue) Stats() QueueStats {
	s := c.Queue.Stats()
	s.Held += c.cool.waiting.Len()
	return s
}

// cooledSlots is the slot policy, with no time in it: push for each entry
// the queue is given, done after each step, remove for each entry the
// queue is asked to remove; what they hand back is queued as any ready
// entry. A slot is held from the entry's push to the done (or remove)
// after which it is not queued again.
type cooledSlots struct {
	max     int       // slots; 0 = no cap
	slots   int       // demoted entries holding a slot: ready or running
	waiting EntryList // demoted entries without one, in arrival order
}

// push takes e as the queue is given it and says what to queue now: e
// itself (queue), and another entry that has just got a slot (next, nil
// for none). An entry that is not demoted is queued; if it held a slot (the
// rule that cooled it down was lifted) the slot passes on. A demoted entry
// is queued when it holds a slot and nobody waits, or gets a free one;
// when it held one and others wait, its turn is over: it waits behind
// them and the first of them gets the slot; else it waits.
func (c *cooledSlots) push(e *Entry) (queue bool, next *Entry) {
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

// done accounts a step of e: when e holds a slot and was not queued again
// (it finished or waits for a wake), the slot goes to the first waiting
// entry, which is returned for the queue to queue.
func (c *cooledSlots) done(e *Entry) *Entry {
	if !e.cooledSlot || e.Queued() {
		return nil
	}
	return c.release(e)
}

// remove takes e out: out of the waiting entries (reported by waited), or,
// when the queue is to remove a ready e that held a slot, passes the slot
// on (next).
func (c *cooledSlots) remove(e *Entry) (next *Entry, waited bool) {
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
func (c *cooledSlots) release(e *Entry) *Entry {
	e.cooledSlot = false
	c.slots--
	next := c.waiting.Pop()
	if next != nil {
		next.cooledSlot = true
		c.slots++
	}
	return next
}

// drain returns the next waiting entry, slot or not, for Close.
func (c *cooledSlots) drain() *Entry { return c.waiting.Pop() }

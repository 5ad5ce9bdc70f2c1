package resource

import (
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/readpool"
)

// Scheduler is the read pool's queue under resource control: a
// readpool.Queue that orders tasks by their group's fair share, a
// readpool.Admitter that gates admission per class and group, and the
// readpool.Accountant that charges each step's RU to its group. Give the
// same Scheduler to a pool as its Queue and its Accountant.
//
// A task carries its group (resolved once, at spawn) in Entry.Tag and, when
// the request overrides its group's class, the Priority in Entry.Priority.
//
// Order. A task's key is its class in the top bits (high, medium, low),
// then its group's virtual time when it is queued, plus a penalty for the
// task's own level — 0, 20 ms or 100 ms of the group's share for tasks that
// have run < 5 ms, < 100 ms, or longer — so within a group short requests
// still go first (TiKV's resource_control: key = vt | class << 60). A
// group's virtual time advances by the RU it is charged divided by its
// RU/s, so saturated groups get throughput in proportion to their shares,
// whatever the lengths of their steps. A group back from idleness starts at
// the smallest virtual time of the active groups: no banked credit.
//
// Limits. A group that is not burstable has a token bucket at its RU/s,
// holding one second's worth. Its tasks wait in the held set while the
// bucket is empty, holding no worker; they still count against their own
// group's room.
//
// Preemption. A step's class is its key when it was popped; the hint is the
// smallest queued key plus FarBehind. So a step yields at its next unit
// while a task of a higher class is queued, or one whose key is more than
// FarBehind of virtual time below its own: a task of a group far behind in
// virtual time, or a fresh request of its own group beside a step that has
// sunk to the last level (100 ms of penalty).
//
// Admission. Each class has MaxTasks of room (TiKV gates per priority,
// tikv #16049) for its queued and running tasks. When a class is full, a
// group may still be admitted up to its share of the room (its RU/s
// against the active groups' of its class): a flooding group makes itself
// busy, not its neighbours. Held tasks take no room in their class, only in
// their group's own, which is MaxTasks too: a throttled group cannot pile
// up tasks without bound.
type Scheduler struct {
	m      *Manager
	ready  readpool.EntryHeap
	held   readpool.EntryHeap // by the pool time the entry may be looked at again
	pre    *readpool.Preemption
	active []*Group // groups with occupancy > 0
	// floor is the virtual time a group starts at when none is active: the
	// largest any group had when the pool last emptied, so that a group
	// back from idleness into an idle pool banks no credit either.
	floor uint64
	now   time.Duration // the latest pool time the pool passed in
	class [numClasses]int
	steps int64
	time  time.Duration
	// changed is set when a group's config changed or a group was deleted
	// since the last Pop: the tasks held for their limits are looked at
	// again.
	changed atomic.Bool
}

// NewScheduler returns a scheduler over m's groups.
func NewScheduler(m *Manager) *Scheduler {
	return &Scheduler{m: m, pre: readpool.NewPreemption()}
}

const (
	numClasses = 3
	classShift = 60
	maxVTime   = 1<<classShift - 1
)

// Entry.QueueState: what the scheduler has counted the entry in.
const (
	qsCounted    = 1 << iota // the group's occupancy
	qsInClass                // its class's occupancy (not while held: a held task takes only its group's room)
	qsRunning                // the group's running tasks
	qsHeld                   // in the held set (else, when queued, ready)
	qsCooled                 // waiting for a cooled slot, outside (HoldOutside)
	qsClassShift = 8         // the class it was counted in, above the flags
)

// IdleGrace is how long a group may have no task queued, held or running
// and still keep its virtual time when one comes back: at most this much
// credit can be banked.
const IdleGrace = 100 * time.Millisecond

// FarBehind is how far below a running step's key, in virtual time, a
// queued task's key must be for the step to yield to it (within a class).
const FarBehind = 50 * time.Millisecond

// levelPenalty is added to a task's key by its own level: tasks that have
// run longer yield to fresh ones of their group (TiKV: 0, 20, 100 ms).
var levelPenalty = [3]time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond}

// levelOf is a task's level within its group, by the MLFQ's thresholds.
func levelOf(elapsed time.Duration) int {
	return readpool.LevelFor(elapsed, readpool.DefaultLevelThresholds())
}

// classOf maps a priority to a class: 0 runs first.
func classOf(p Priority) int {
	switch p {
	case PriorityHigh:
		return 0
	case PriorityLow:
		return 2
	}
	return 1
}

func (s *Scheduler) groupOf(e *readpool.Entry) *Group {
	if g, ok := e.Tag.(*Group); ok && g != nil {
		return g
	}
	return s.m.def
}

// classFor is e's class: the request's own priority when it set a valid
// one, else its group's.
func classFor(e *readpool.Entry, cfg *GroupConfig) int {
	if e.Demoted {
		return classOf(PriorityLow) // a runaway read's cooldown
	}
	if p := Priority(e.Priority); p.Valid() {
		return classOf(p)
	}
	return classOf(cfg.Priority)
}

func limited(cfg *GroupConfig) bool { return !cfg.Burstable && cfg.RUPerSec > 0 }

// MayInline implements readpool.Queue: unless the task's group is out of
// tokens. Lock-free: it reads the group's config and bucket atomically.
func (s *Scheduler) MayInline(e *readpool.Entry) bool {
	g := s.groupOf(e)
	cfg := *g.config()
	if limited(&cfg) && g.tokens.Load() <= 0 {
		return false
	}
	e.Class = int64(s.keyOf(e, g, classFor(e, &cfg)))
	return true
}

// keyOf is e's place in the order: its class in the top bits, then its
// group's virtual time now plus its level's penalty.
func (s *Scheduler) keyOf(e *readpool.Entry, g *Group, c int) uint64 {
	lv := levelOf(e.Elapsed)
	if e.Demoted {
		lv = len(levelPenalty) - 1
	}
	e.Level = lv
	vt := g.vtime.Load() + uint64(levelPenalty[lv])
	return uint64(c)<<classShift | min(vt, maxVTime)
}

// Push implements readpool.Queue.
func (s *Scheduler) Push(e *readpool.Entry, now time.Duration) {
	if now != readpool.Forever {
		s.now = max(s.now, now)
	}
	g := s.groupOf(e)
	cfg := *g.config()
	c := classFor(e, &cfg)
	s.count(e, g, c)
	if limited(&cfg) {
		g.refill(&cfg, now)
		if t := g.tokens.Load(); t <= 0 {
			// Out of tokens: hold the task until the bucket has refilled
			// what the group owes.
			wait := time.Duration(float64(-t+1) / (cfg.RUPerSec * microRU) * float64(time.Second))
			wait = max(wait, time.Microsecond)
			e.Key = uint64(now + wait)
			s.leaveClass(e)
			e.QueueState |= qsHeld
			s.held.Push(e)
			g.held.Add(1)
			g.throttled.Add(int64(wait))
			return
		}
	}
	s.ready.Push(s.keyed(e, g, c))
	g.queued.Add(1)
	s.publish()
}

// keyed sets e's key for class c of group g and returns e.
func (s *Scheduler) keyed(e *readpool.Entry, g *Group, c int) *readpool.Entry {
	e.Key = s.keyOf(e, g, c)
	return e
}

// HoldOutside implements readpool.OutsideHolder: a demoted task waiting
// for a cooled slot counts in its group's occupancy, as held.
func (s *Scheduler) HoldOutside(e *readpool.Entry) {
	g := s.groupOf(e)
	cfg := *g.config()
	s.count(e, g, classFor(e, &cfg))
	e.QueueState |= qsCooled
	g.held.Add(1)
}

// ReleaseOutside implements readpool.OutsideHolder: the task has a slot
// (and is pushed next), or is gone.
func (s *Scheduler) ReleaseOutside(e *readpool.Entry, removed bool) {
	e.QueueState &^= qsCooled
	g := s.groupOf(e)
	g.held.Add(-1)
	if removed {
		s.uncount(e, g)
	}
}

// Ran implements readpool.Queue: an inline first step that goes on.
func (s *Scheduler) Ran(e *readpool.Entry, now time.Duration) {
	s.now = max(s.now, now)
	g := s.groupOf(e)
	cfg := *g.config()
	c := classFor(e, &cfg)
	s.count(e, g, c)
	e.QueueState |= qsRunning
	g.running.Add(1)
	e.Class = int64(s.keyOf(e, g, c))
}

// SetKick implements readpool.Kickable: after a change of a group's config
// or a deletion, the pool is kicked and the next Pop looks at every held
// task again, by its group's config as it is now (a deleted group's as the
// default group's): a task held for a limit that was raised or removed does
// not wait out the debt the old limit gave it.
func (s *Scheduler) SetKick(kick func()) {
	s.m.watch(func() {
		s.changed.Store(true)
		kick()
	})
}

// Pop implements readpool.Queue: held tasks whose time has come (all of
// them after a group changed) are looked at again, and held again if their
// bucket is still empty; then the lowest key runs.
func (s *Scheduler) Pop(now time.Duration) *readpool.Entry {
	if now != readpool.Forever {
		s.now = max(s.now, now)
	}
	if s.changed.Swap(false) && now != readpool.Forever {
		// Every held task is looked at again. All are taken out first:
		// one may be held again, and must not be met twice.
		var all []*readpool.Entry
		for e := s.held.Min(); e != nil; e = s.held.Min() {
			s.unhold(e, now)
			all = append(all, e)
		}
		for _, e := range all {
			s.Push(e, now)
		}
	}
	for e := s.held.Min(); e != nil && time.Duration(e.Key) <= now; e = s.held.Min() {
		s.unhold(e, now)
		if now == readpool.Forever {
			// Close drains: skip the bucket.
			e.Key = 0
			s.ready.Push(e)
			s.groupOf(e).queued.Add(1)
			continue
		}
		s.Push(e, now)
	}
	e := s.ready.Pop()
	if e == nil {
		s.publish()
		return nil
	}
	g := s.groupOf(e)
	g.queued.Add(-1)
	g.running.Add(1)
	e.QueueState |= qsRunning
	e.Class = int64(e.Key)
	s.publish()
	return e
}

// unhold takes e out of the held set at now, for Pop to push it again.
func (s *Scheduler) unhold(e *readpool.Entry, now time.Duration) {
	s.held.Remove(e)
	e.QueueState &^= qsHeld
	g := s.groupOf(e)
	g.held.Add(-1)
	s.refund(e, g, now)
}

// refund takes back from g's throttled time the part of held e's planned
// wait (counted in full when it was held) that it will not wait: it leaves
// the held set at now, or at the latest time the pool told of (Close's
// drain, a Remove).
func (s *Scheduler) refund(e *readpool.Entry, g *Group, now time.Duration) {
	if now == readpool.Forever {
		now = s.now
	}
	if early := time.Duration(e.Key) - now; early > 0 {
		g.throttled.Add(-int64(early))
	}
}

// Remove implements readpool.Queue.
func (s *Scheduler) Remove(e *readpool.Entry) bool {
	if !e.Queued() {
		return false
	}
	e.Unlink()
	g := s.groupOf(e)
	if e.QueueState&qsHeld != 0 {
		g.held.Add(-1)
		s.refund(e, g, s.now)
	} else {
		g.queued.Add(-1)
	}
	s.uncount(e, g)
	s.publish()
	return true
}

// Done implements readpool.Queue. A task that was not queued again (it
// finished, or waits for a wake) leaves its group's occupancy.
func (s *Scheduler) Done(e *readpool.Entry, elapsed, now time.Duration) {
	s.now = max(s.now, now)
	s.steps++
	s.time += elapsed
	g := s.groupOf(e)
	if e.QueueState&qsRunning != 0 {
		e.QueueState &^= qsRunning
		g.running.Add(-1)
	}
	if !e.Queued() {
		s.uncount(e, g)
	}
}

// publish tells running steps the most urgent key waiting, plus
// FarBehind: steps whose key is above it yield.
func (s *Scheduler) publish() {
	if e := s.ready.Min(); e != nil {
		s.pre.Set(int64(e.Key + uint64(FarBehind))) // keys < 2^62: no overflow
	} else {
		s.pre.Set(readpool.NoPreemption)
	}
}

// Len implements readpool.Queue.
func (s *Scheduler) Len() int { return s.ready.Len() }

// Held implements readpool.Queue: the tasks held for their groups' limits.
func (s *Scheduler) Held() (int, time.Duration) {
	if e := s.held.Min(); e != nil {
		return s.held.Len(), time.Duration(e.Key)
	}
	return 0, 0
}

// Preemption implements readpool.Queue.
func (s *Scheduler) Preemption() *readpool.Preemption { return s.pre }

// Stats implements readpool.Queue: one level per class.
func (s *Scheduler) Stats() readpool.QueueStats {
	st := readpool.QueueStats{Kind: "priority", Levels: make([]readpool.LevelStats, numClasses), Held: s.held.Len(), Level0Share: 1, Chance: 1}
	for e := range s.ready.All() {
		st.Levels[e.Key>>classShift].Queued++
	}
	st.Levels[0].Steps, st.Levels[0].Time = s.steps, s.time
	return st
}

// Charge implements readpool.Accountant: the step's RU go to its group's
// total, its virtual time (RU ÷ its share) and, when it is limited, its
// bucket. Called after every step, outside the pool's lock.
func (s *Scheduler) Charge(e *readpool.Entry, u readpool.Usage) {
	g := s.groupOf(e)
	cfg := *g.config()
	ru := RU(u.Exec, u.Bytes, u.First)
	micro := uint64(ru * microRU)
	g.ru.Add(micro)
	g.window.add(s.m.clock(), micro)
	g.vtime.Add(uint64(ru / share(&cfg) * float64(time.Second)))
	if limited(&cfg) {
		g.tokens.Add(-int64(micro))
	}
}

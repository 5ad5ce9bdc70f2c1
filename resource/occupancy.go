package resource

import (
	"math"

	"github.com/coopkv/coopkv/readpool"
)

// Occupancy: which tasks each group and each class holds, counted from a
// task's first Push (or Ran) until its last Done or its Remove, and the
// admission it gates (readpool.Admitter). A group with tasks is active;
// one that comes back from idleness starts at the active groups' virtual
// time. The flags of Entry.QueueState say what a task is counted in.

// Admit implements readpool.Admitter.
func (s *Scheduler) Admit(e *readpool.Entry, maxTasks int) bool {
	g := s.groupOf(e)
	if g.occupancy >= maxTasks {
		// The group's own room, held tasks included: a throttled group
		// cannot pile up tasks without bound.
		g.rejected.Add(1)
		return false
	}
	cfg := *g.config()
	c := classFor(e, &cfg)
	if s.class[c] < maxTasks {
		return true
	}
	// The class is full: admit up to the group's share of its room.
	mine := share(&cfg)
	total := mine
	for _, a := range s.active {
		if a == g {
			continue
		}
		ac := *a.config()
		if classOf(ac.Priority) == c {
			total += share(&ac)
		}
	}
	if float64(g.occupancy) < math.Max(1, float64(maxTasks)*mine/total) {
		return true
	}
	g.rejected.Add(1)
	return false
}

// count adds e to its group's occupancy, activating the group, and to its
// class's.
func (s *Scheduler) count(e *readpool.Entry, g *Group, c int) {
	if e.QueueState&qsCounted == 0 {
		if !g.active && (!g.everActive || s.now-g.idleSince >= IdleGrace) {
			// Back from idleness: no credit for the time it had nothing to
			// run. A group idle for less than IdleGrace keeps its place:
			// its scans were only waiting for their readers to take rows
			// (Pending tasks are not in the queue), and lifting it every
			// time would erase the lead a bigger share earns.
			minV, ok := s.minActiveVTime()
			if !ok {
				minV = s.floor
			}
			for {
				v := g.vtime.Load()
				if v >= minV || g.vtime.CompareAndSwap(v, minV) {
					break
				}
			}
		}
		if !g.active {
			g.active, g.everActive = true, true
			s.active = append(s.active, g)
		}
		g.occupancy++
		e.QueueState |= qsCounted | uint64(c)<<qsClassShift
	}
	if e.QueueState&qsInClass == 0 {
		s.class[e.QueueState>>qsClassShift]++
		e.QueueState |= qsInClass
	}
}

// leaveClass takes e out of its class's occupancy (it is held, or leaves).
func (s *Scheduler) leaveClass(e *readpool.Entry) {
	if e.QueueState&qsInClass != 0 {
		s.class[e.QueueState>>qsClassShift]--
		e.QueueState &^= qsInClass
	}
}

// uncount takes e out of the occupancy it was counted in.
func (s *Scheduler) uncount(e *readpool.Entry, g *Group) {
	if e.QueueState&qsCounted == 0 {
		return
	}
	s.leaveClass(e)
	e.QueueState = 0
	g.occupancy--
	if g.occupancy == 0 {
		g.active, g.idleSince = false, s.now
		for i, a := range s.active {
			if a == g {
				s.active = append(s.active[:i], s.active[i+1:]...)
				break
			}
		}
		if len(s.active) == 0 && g != s.m.bg {
			s.floor = max(s.floor, g.vtime.Load())
		}
	}
}

// The Background group is left out here and from the floor: its share is a
// ten-thousandth of a tenant's, so its virtual time runs far ahead of
// theirs, and a tenant back from idleness beside it alone would start
// there, behind every tenant that stayed active.
func (s *Scheduler) minActiveVTime() (uint64, bool) {
	var minV uint64
	ok := false
	for _, a := range s.active {
		if a == s.m.bg {
			continue
		}
		if v := a.vtime.Load(); !ok || v < minV {
			minV, ok = v, true
		}
	}
	return minV, ok
}

package resource

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// newScheduler returns a scheduler over a fresh manager holding groups.
func newScheduler(t *testing.T, groups ...GroupConfig) (*Manager, *Scheduler) {
	t.Helper()
	m := NewManager()
	for _, c := range groups {
		require.NoError(t, m.Put(c))
	}
	return m, NewScheduler(m)
}

// entry is a fresh task of group g, as a spawner makes it.
func entry(g *Group) *readpool.Entry { return &readpool.Entry{Tag: g} }

// popAll pops every ready entry at now, in order.
func popAll(s *Scheduler, now time.Duration) []*readpool.Entry {
	var out []*readpool.Entry
	for e := s.Pop(now); e != nil; e = s.Pop(now) {
		out = append(out, e)
	}
	return out
}

// charge runs one step of e of length d, charges it and ends it (not
// queued again).
func charge(s *Scheduler, e *readpool.Entry, d time.Duration, now time.Duration) {
	e.Elapsed += d
	s.Charge(e, readpool.Usage{Exec: d})
	s.Done(e, d, now)
}

func TestScheduler_ClassesBeforeVirtualTime(t *testing.T) {
	m, s := newScheduler(t,
		GroupConfig{Name: "hi", RUPerSec: 1, Burstable: true, Priority: PriorityHigh},
		GroupConfig{Name: "mid", RUPerSec: 10000, Burstable: true},
		GroupConfig{Name: "lo", RUPerSec: 10000, Burstable: true, Priority: PriorityLow})
	hi, mid, lo := m.Resolve("hi"), m.Resolve("mid"), m.Resolve("lo")
	names := map[*readpool.Entry]string{}
	push := func(g *Group, prio Priority, name string) *readpool.Entry {
		e := entry(g)
		e.Priority = uint64(prio)
		names[e] = name
		s.Push(e, 0)
		return e
	}
	push(lo, 0, "lo0")
	push(mid, 0, "mid0")
	// The high group has used far more than its share: an hour of virtual
	// time against nothing. It still goes first.
	e := push(hi, 0, "hi0")
	require.Same(t, e, s.Pop(0))
	e.Elapsed = 10800 * time.Millisecond
	s.Charge(e, readpool.Usage{Exec: e.Elapsed}) // 3600 RU at 1 RU/s
	s.Push(e, 0)
	s.Done(e, e.Elapsed, 0)
	require.Equal(t, time.Hour, time.Duration(hi.vtime.Load()))

	// Interleaved arrivals; Priority overrides the group's class when it
	// is a valid class, and is ignored otherwise.
	push(lo, 0, "lo1")
	push(mid, 0, "mid1")
	push(hi, 0, "hi1")
	push(lo, PriorityHigh, "lo-as-high")
	push(hi, PriorityLow, "hi-as-low")
	push(mid, 3, "mid-bad-override")
	push(lo, 0, "lo2")
	push(hi, 0, "hi2")
	push(mid, PriorityMedium, "mid-as-medium")
	var got []string
	var classes []int64
	for _, e := range popAll(s, 0) {
		got = append(got, names[e])
		classes = append(classes, e.Class>>classShift)
	}
	assert.Equal(t, []string{
		"lo-as-high", "hi1", "hi2", "hi0", // lo's virtual time is 0, hi's an hour (+100 ms for hi0's level)
		"mid0", "mid1", "mid-bad-override", "mid-as-medium",
		"lo0", "lo1", "lo2", "hi-as-low",
	}, got, "class first, then virtual time, then arrival")
	assert.Equal(t, []int64{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}, classes, "Pop sets Entry.Class")
}

func TestScheduler_ArrivalOrderWithinAGroupAndLevel(t *testing.T) {
	m, s := newScheduler(t, GroupConfig{Name: "g", RUPerSec: 100, Burstable: true})
	g := m.Resolve("g")
	var in []*readpool.Entry
	for range 10 {
		e := entry(g)
		in = append(in, e)
		s.Push(e, 0)
	}
	assert.Equal(t, in, popAll(s, 0))
}

func TestScheduler_LevelPenaltyWithinAGroup(t *testing.T) {
	for _, c := range []struct {
		elapsed time.Duration
		level   int
	}{{0, 0}, {4 * time.Millisecond, 0}, {5 * time.Millisecond, 1}, {50 * time.Millisecond, 1}, {100 * time.Millisecond, 2}, {time.Hour, 2}} {
		t.Run(fmt.Sprint(c.elapsed), func(t *testing.T) {
			m, s := newScheduler(t, GroupConfig{Name: "g", RUPerSec: 1000, Burstable: true})
			g := m.Resolve("g")
			old := entry(g)
			old.Elapsed = c.elapsed
			s.Push(old, 0)
			fresh := entry(g)
			s.Push(fresh, 0)
			assert.Equal(t, c.level, old.Level)
			assert.Equal(t, 0, fresh.Level)
			got := popAll(s, 0)
			if c.level == 0 {
				assert.Equal(t, []*readpool.Entry{old, fresh}, got, "same level: arrival order")
			} else {
				assert.Equal(t, []*readpool.Entry{fresh, old}, got, "a fresh entry overtakes one that has run %v", c.elapsed)
			}
		})
	}
	t.Run("levels 0, 1, 2", func(t *testing.T) {
		m, s := newScheduler(t, GroupConfig{Name: "g", RUPerSec: 1000, Burstable: true})
		g := m.Resolve("g")
		l2, l1, l0 := entry(g), entry(g), entry(g)
		l2.Elapsed, l1.Elapsed = 200*time.Millisecond, 50*time.Millisecond
		s.Push(l2, 0)
		s.Push(l1, 0)
		s.Push(l0, 0)
		assert.Equal(t, []*readpool.Entry{l0, l1, l2}, popAll(s, 0))
	})
	t.Run("the penalty is worth 20 ms of the group's virtual time", func(t *testing.T) {
		m, s := newScheduler(t,
			GroupConfig{Name: "a", RUPerSec: 1000, Burstable: true},
			GroupConfig{Name: "b", RUPerSec: 1000, Burstable: true})
		a, b := m.Resolve("a"), m.Resolve("b")
		// b is 10 ms of virtual time ahead: 10 RU at 1000 RU/s.
		e := entry(b)
		s.Push(e, 0)
		require.Same(t, e, s.Pop(0))
		charge(s, e, 30*time.Millisecond, 0)
		require.Equal(t, 10*time.Millisecond, time.Duration(b.vtime.Load()))
		ea := entry(a)
		ea.Elapsed = 50 * time.Millisecond // level 1: +20 ms
		eb := entry(b)
		s.Push(ea, 0)
		s.Push(eb, 0)
		assert.Equal(t, []*readpool.Entry{eb, ea}, popAll(s, 0))
	})
}

func TestScheduler_PreemptionHint(t *testing.T) {
	m, s := newScheduler(t,
		GroupConfig{Name: "hi", Burstable: true, Priority: PriorityHigh},
		GroupConfig{Name: "lo", Burstable: true, Priority: PriorityLow})
	pre := s.Preemption()
	require.NotNil(t, pre)
	assert.Equal(t, readpool.NoPreemption, pre.Load(), "nothing queued")
	yields := func(running *readpool.Entry) bool { return running.Class > pre.Load() }

	running := entry(m.Resolve("lo"))
	s.Push(running, 0)
	require.Same(t, running, s.Pop(0))
	assert.EqualValues(t, 2, running.Class>>classShift)
	assert.Equal(t, readpool.NoPreemption, pre.Load(), "nothing ready: no step need yield")

	peer := entry(m.Resolve("lo"))
	s.Push(peer, 0)
	assert.False(t, yields(running), "a task of its own class and virtual time: no yield")
	mid := entry(m.Resolve(DefaultGroup))
	s.Push(mid, 0)
	assert.True(t, yields(running), "a medium task waits: the low step yields")
	hi := entry(m.Resolve("hi"))
	s.Push(hi, 0)
	assert.True(t, yields(running))

	// A removed task no longer asks anyone to yield.
	require.True(t, s.Remove(hi))
	require.True(t, s.Remove(mid))
	assert.False(t, yields(running))
	require.True(t, s.Remove(peer))
	assert.Equal(t, readpool.NoPreemption, pre.Load())

	// A request-level override publishes its own class.
	over := entry(m.Resolve("lo"))
	over.Priority = uint64(PriorityHigh)
	s.Push(over, 0)
	assert.True(t, yields(running))
	require.Same(t, over, s.Pop(0))
	assert.EqualValues(t, 0, over.Class>>classShift)
	assert.Equal(t, readpool.NoPreemption, pre.Load())
}

// Within a class, a step yields to a task whose group is far behind in
// virtual time, and to a fresh request of its own group when it has sunk
// to the last level; not to a peer at about its own virtual time.
func TestScheduler_PreemptionFarBehind(t *testing.T) {
	m, s := newScheduler(t,
		GroupConfig{Name: "a", RUPerSec: 1000, Burstable: true},
		GroupConfig{Name: "b", RUPerSec: 1000, Burstable: true})
	a, b := m.Resolve("a"), m.Resolve("b")
	pre := s.Preemption()

	scan := entry(a)
	s.Push(scan, 0)
	require.Same(t, scan, s.Pop(0))
	charge(s, scan, 300*time.Millisecond, 0) // a: 100 RU, 100 ms of virtual time
	scan.Elapsed = 300 * time.Millisecond    // level 2 from now on
	s.Push(scan, 0)
	require.Same(t, scan, s.Pop(0))
	assert.Equal(t, int64(1)<<classShift+int64(a.vtime.Load())+int64(100*time.Millisecond), scan.Class, "medium, a's virtual time plus the level-2 penalty")

	fresh := entry(a)
	s.Push(fresh, 0)
	assert.Greater(t, scan.Class, pre.Load(), "a fresh request of its own group: the sunk step yields")
	require.True(t, s.Remove(fresh))

	s.Push(entry(b), 0) // b is back from idleness: lifted to a's virtual time
	assert.Equal(t, a.vtime.Load(), b.vtime.Load())
	assert.Greater(t, scan.Class, pre.Load(), "b at a's time, without the penalty: far enough behind")
}

func TestScheduler_RemoveReadyAndHeld(t *testing.T) {
	m, s := newScheduler(t,
		GroupConfig{Name: "free", RUPerSec: 100, Burstable: true},
		GroupConfig{Name: "lim", RUPerSec: 10})
	free, lim := m.Resolve("free"), m.Resolve("lim")

	// Empty lim's bucket: 10 RU a second, 60 ms charged is 20 RU.
	e := entry(lim)
	s.Push(e, 0)
	require.Same(t, e, s.Pop(0))
	charge(s, e, 60*time.Millisecond, 0)
	require.LessOrEqual(t, lim.tokens.Load(), int64(0))

	ready1, ready2 := entry(free), entry(free)
	held1, held2 := entry(lim), entry(lim)
	for _, e := range []*readpool.Entry{ready1, ready2, held1, held2} {
		s.Push(e, time.Millisecond)
	}
	n, until := s.Held()
	require.Equal(t, 2, n)
	require.Greater(t, until, time.Millisecond)
	require.Equal(t, 2, s.Len())
	check := func(name string, queued, held int64) {
		t.Helper()
		stFree, stLim := groupStats(t, m, "free"), groupStats(t, m, "lim")
		assert.Equal(t, queued, stFree.Queued, name)
		assert.Equal(t, held, stLim.Held, name)
		assert.EqualValues(t, queued, s.Len(), name)
		n, _ := s.Held()
		assert.EqualValues(t, held, n, name)
		assert.Equal(t, int(queued), free.occupancy, name)
		assert.Equal(t, int(held), lim.occupancy, name)
		assert.Equal(t, int(queued), s.class[1], name+": held tasks take only their group's room")
		assert.Equal(t, held, int64(s.Stats().Held), name)
		assert.Equal(t, int(queued), s.Stats().Levels[1].Queued, name)
		assert.Equal(t, queued > 0, free.active, name)
		assert.Equal(t, held > 0, lim.active, name)
		assert.Len(t, s.active, btoi(queued > 0)+btoi(held > 0), name)
	}
	check("before", 2, 2)

	assert.True(t, s.Remove(ready1))
	check("a ready entry removed", 1, 2)
	assert.False(t, s.Remove(ready1), "not queued any more")
	check("removed twice", 1, 2)

	assert.True(t, s.Remove(held2))
	check("a held entry removed", 1, 1)

	running := s.Pop(time.Millisecond)
	require.Same(t, ready2, running)
	assert.False(t, s.Remove(running), "a popped entry is not the queue's to remove")
	assert.EqualValues(t, 1, groupStats(t, m, "free").Running)
	s.Done(running, time.Millisecond, 2*time.Millisecond)
	check("the popped entry done", 0, 1)

	assert.True(t, s.Remove(held1))
	check("all gone", 0, 0)
	n, _ = s.Held()
	assert.Zero(t, n)
	assert.Nil(t, s.Pop(time.Hour), "a removed held entry never comes back")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func groupStats(t *testing.T, m *Manager, name string) GroupStats {
	t.Helper()
	for _, st := range m.Stats() {
		if st.Name == name {
			return st
		}
	}
	require.Fail(t, "no such group", name)
	return GroupStats{}
}

// A held entry comes back when its bucket has refilled what the group
// owes, not before; Pop(Forever), Close's drain, releases it at once.
func TestScheduler_HeldUntilTokensComeBack(t *testing.T) {
	m, s := newScheduler(t, GroupConfig{Name: "lim", RUPerSec: 100})
	lim := m.Resolve("lim")
	e := entry(lim)
	s.Push(e, 0)
	require.Same(t, e, s.Pop(0), "a full bucket: runs at once")
	e.Elapsed += 600 * time.Millisecond
	s.Charge(e, readpool.Usage{Exec: 600 * time.Millisecond, First: true}) // 200.125 RU: 100.125 owed
	s.Push(e, 600*time.Millisecond)
	s.Done(e, 600*time.Millisecond, 600*time.Millisecond)

	n, until := s.Held()
	require.Equal(t, 1, n)
	// 100 RU in the bucket at 0, 200.125 RU charged, 60 RU refilled by
	// 600 ms: 40.125 RU owed, refilled at 100 RU/s by 1.00125 s.
	assert.InDelta(t, 1001250*time.Microsecond, until, float64(time.Microsecond))
	assert.Nil(t, s.Pop(until-time.Microsecond), "not before its time")
	assert.Zero(t, s.Len())
	st := groupStats(t, m, "lim")
	assert.EqualValues(t, 1, st.Held)
	assert.Equal(t, until-600*time.Millisecond, st.Throttled)

	got := s.Pop(until)
	require.Same(t, e, got, "back when the tokens are")
	assert.Zero(t, groupStats(t, m, "lim").Held)

	// Drain: held or not, Pop(Forever) returns everything.
	s.Charge(e, readpool.Usage{Exec: 3 * time.Second}) // deep in debt
	s.Push(e, until)
	s.Done(e, 0, until)
	n, _ = s.Held()
	require.Equal(t, 1, n)
	require.Same(t, e, s.Pop(readpool.Forever))
	s.Done(e, 0, until)
	assert.Zero(t, lim.occupancy)
	assert.Empty(t, s.active)
}

func TestScheduler_MayInlineAndRan(t *testing.T) {
	m, s := newScheduler(t,
		GroupConfig{Name: "lim", RUPerSec: 10},
		GroupConfig{Name: "lo", Burstable: true, Priority: PriorityLow})
	lim, lo := m.Resolve("lim"), m.Resolve("lo")

	e := entry(lo)
	require.True(t, s.MayInline(e))
	assert.EqualValues(t, 2, e.Class>>classShift)
	e.Priority = uint64(PriorityHigh)
	require.True(t, s.MayInline(e))
	assert.EqualValues(t, 0, e.Class>>classShift, "the request's override")

	// An inline first step that goes on is counted as running, then done.
	e.Elapsed = time.Millisecond
	s.Ran(e, time.Millisecond)
	s.Charge(e, readpool.Usage{Exec: time.Millisecond, First: true})
	assert.EqualValues(t, 1, groupStats(t, m, "lo").Running)
	assert.Equal(t, 1, lo.occupancy)
	assert.Equal(t, 1, s.class[0])
	s.Push(e, time.Millisecond)
	s.Done(e, time.Millisecond, time.Millisecond)
	st := groupStats(t, m, "lo")
	assert.EqualValues(t, 0, st.Running)
	assert.EqualValues(t, 1, st.Queued)
	require.Same(t, e, s.Pop(time.Millisecond))
	s.Done(e, 0, time.Millisecond)
	assert.Zero(t, lo.occupancy)
	assert.Equal(t, [numClasses]int{}, s.class)

	// A limited group may inline while it has tokens, not after.
	f := entry(lim)
	require.True(t, s.MayInline(f))
	s.Charge(f, readpool.Usage{Exec: 30 * time.Millisecond}) // its 10 RU
	assert.False(t, s.MayInline(entry(lim)))
	assert.True(t, s.MayInline(entry(lo)), "others are not concerned")

	// A read in cooldown waits for a cooled slot, whatever its class: the
	// pool's cooldown refuses it, around the scheduler as around the MLFQ.
	d := entry(lo)
	d.Demoted, d.Priority = true, uint64(PriorityHigh)
	assert.False(t, readpool.WithCooldown(s, 0).MayInline(d), "demoted")
}

func TestScheduler_Admit(t *testing.T) {
	const maxTasks = 4
	for _, c := range []struct {
		name     string
		flood    float64 // the flooding group's RU/s
		neighbor float64 // the same class's other group's RU/s
		want     int     // neighbor tasks admitted once the class is full
	}{
		{"equal shares", 100, 100, 2},
		{"neighbour 3x", 100, 300, 3},
		{"neighbour tiny: still one", 10000, 1, 1},
		{"neighbour unlimited", 100, 0, 4}, // 10000 / 10100 of 4 rooms: 3.96
	} {
		t.Run(c.name, func(t *testing.T) {
			m, s := newScheduler(t,
				GroupConfig{Name: "flood", RUPerSec: c.flood, Burstable: true},
				GroupConfig{Name: "neighbor", RUPerSec: c.neighbor, Burstable: true},
				GroupConfig{Name: "low", RUPerSec: 1, Burstable: true, Priority: PriorityLow},
				GroupConfig{Name: "high", RUPerSec: 1, Burstable: true, Priority: PriorityHigh})
			admitPush := func(name string) bool {
				e := entry(m.Resolve(name))
				if !s.Admit(e, maxTasks) {
					return false
				}
				s.Push(e, 0)
				return true
			}
			for i := range maxTasks {
				require.True(t, admitPush("flood"), "the class has room: task %d", i)
			}
			assert.False(t, admitPush("flood"), "the class is full of its tasks")
			assert.False(t, admitPush("flood"))
			assert.EqualValues(t, 2, groupStats(t, m, "flood").RejectedBusy)

			n := 0
			for admitPush("neighbor") {
				n++
				require.LessOrEqual(t, n, maxTasks)
			}
			assert.Equal(t, c.want, n, "the neighbour gets its share of the room")
			assert.EqualValues(t, 1, groupStats(t, m, "neighbor").RejectedBusy)
			assert.False(t, admitPush("flood"), "still busy")

			for i := range maxTasks {
				assert.True(t, admitPush("low"), "another class has its own room: %d", i)
				assert.True(t, admitPush("high"), "another class has its own room: %d", i)
			}
			for _, name := range []string{"low", "high"} {
				assert.Zero(t, groupStats(t, m, name).RejectedBusy, name)
			}

			// Once the tasks have run, the class has room again.
			for _, e := range popAll(s, 0) {
				s.Done(e, 0, 0)
			}
			assert.Equal(t, [numClasses]int{}, s.class)
			assert.Empty(t, s.active)
			for i := range maxTasks {
				assert.True(t, admitPush("flood"), "task %d", i)
			}
		})
	}
}

// Held tasks count against their own group's room, so a throttled group
// cannot pile up tasks without bound.
func TestScheduler_AdmitCountsHeldTasks(t *testing.T) {
	const maxTasks = 4
	m, s := newScheduler(t, GroupConfig{Name: "lim", RUPerSec: 10})
	lim := m.Resolve("lim")
	e := entry(lim)
	require.True(t, s.Admit(e, maxTasks))
	s.Push(e, 0)
	require.Same(t, e, s.Pop(0))
	charge(s, e, time.Second, 0) // deep in debt
	s.Done(e, time.Second, 0)
	for range maxTasks {
		e := entry(lim)
		require.True(t, s.Admit(e, maxTasks))
		s.Push(e, 0)
	}
	n, _ := s.Held()
	require.Equal(t, maxTasks, n)
	assert.Zero(t, s.class[1], "held tasks are not in their class's room")
	assert.False(t, s.Admit(entry(lim), maxTasks), "the group's own room is full")
	assert.True(t, s.Admit(entry(m.Default()), maxTasks), "another group of the class gets its share")
}

func TestScheduler_Stats(t *testing.T) {
	m, s := newScheduler(t,
		GroupConfig{Name: "hi", Burstable: true, Priority: PriorityHigh},
		GroupConfig{Name: "lo", Burstable: true, Priority: PriorityLow},
		GroupConfig{Name: "lim", RUPerSec: 1})
	lim := m.Resolve("lim")
	e := entry(lim)
	s.Push(e, 0)
	require.Same(t, e, s.Pop(0))
	charge(s, e, 30*time.Millisecond, time.Millisecond)
	for _, name := range []string{"hi", "hi", "lo", DefaultGroup, "lim"} {
		s.Push(entry(m.Resolve(name)), time.Millisecond)
	}
	st := s.Stats()
	assert.Equal(t, "priority", st.Kind)
	require.Len(t, st.Levels, 3)
	assert.Equal(t, []int{2, 1, 1}, []int{st.Levels[0].Queued, st.Levels[1].Queued, st.Levels[2].Queued})
	assert.Equal(t, 1, st.Held)
	assert.EqualValues(t, 1, st.Levels[0].Steps)
	assert.Equal(t, 30*time.Millisecond, st.Levels[0].Time)
	assert.Equal(t, 4, s.Len())
}

// A group that leaves (its last task done) and comes back while another is
// busy starts level with it, whatever virtual time it left with.
func TestScheduler_ReturningGroupStartsAtTheSmallestActiveVirtualTime(t *testing.T) {
	m, s := newScheduler(t,
		GroupConfig{Name: "a", RUPerSec: 1000, Burstable: true},
		GroupConfig{Name: "b", RUPerSec: 1000, Burstable: true},
		GroupConfig{Name: "c", RUPerSec: 1000, Burstable: true})
	a, b, c := m.Resolve("a"), m.Resolve("b"), m.Resolve("c")
	run := func(g *Group, d time.Duration) *readpool.Entry {
		e := entry(g)
		s.Push(e, 0)
		require.Same(t, e, s.Pop(0))
		e.Elapsed = d
		s.Charge(e, readpool.Usage{Exec: d})
		return e // running: its group stays active
	}
	ea := run(a, 3*time.Second) // a: 1 s of virtual time
	eb := run(b, 6*time.Second) // b: from a's 1 s, +2 s
	assert.Equal(t, time.Second, time.Duration(a.vtime.Load()))
	assert.Equal(t, 3*time.Second, time.Duration(b.vtime.Load()))
	s.Done(eb, 0, 0) // b leaves with 3 s

	run(c, 0) // c was never active: starts at a's
	assert.Equal(t, time.Second, time.Duration(c.vtime.Load()))
	run(b, 0) // b is ahead: it keeps its own
	assert.Equal(t, 3*time.Second, time.Duration(b.vtime.Load()))
	s.Done(ea, 0, 0)
}

// A group whose tasks all wait for their readers a moment (Pending: out of
// the queue) keeps its virtual time when one comes back within IdleGrace;
// one idle for longer is lifted to the active groups' minimum.
func TestScheduler_IdleGraceKeepsALeadBriefly(t *testing.T) {
	m, s := newScheduler(t,
		GroupConfig{Name: "big", RUPerSec: 3000, Burstable: true},
		GroupConfig{Name: "small", RUPerSec: 1000, Burstable: true})
	big, small := m.Resolve("big"), m.Resolve("small")

	// small keeps running; big runs once and goes idle, behind small.
	busy, b := entry(small), entry(big)
	s.Push(busy, 0)
	s.Push(b, 0)
	require.Len(t, popAll(s, 0), 2)
	s.Charge(busy, readpool.Usage{Exec: 300 * time.Millisecond}) // small: 100 RU, 100 ms
	charge(s, b, 3*time.Millisecond, time.Millisecond)           // big finishes: idle
	before := big.vtime.Load()
	require.Less(t, before, small.vtime.Load())

	s.Push(entry(big), time.Millisecond+IdleGrace/2)
	assert.Equal(t, before, big.vtime.Load(), "back within the grace: its lead kept")

	e := s.Pop(time.Millisecond + IdleGrace/2)
	charge(s, e, 0, time.Millisecond+IdleGrace/2) // idle again
	s.Push(entry(big), 2*time.Millisecond+2*IdleGrace)
	assert.Equal(t, small.vtime.Load(), big.vtime.Load(), "idle past the grace: lifted to small's time")
}

// TestScheduler_ThrottledCountsOnlyTheWaitTaken: a held task's planned wait
// is counted as throttled when it is held; a task removed while held (its
// reader gone) or drained by Close at once gives back what it did not wait.
func TestScheduler_ThrottledCountsOnlyTheWaitTaken(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(s *Scheduler, e *readpool.Entry)
	}{
		{"removed", func(s *Scheduler, e *readpool.Entry) { require.True(t, s.Remove(e)) }},
		{"drained by Close", func(s *Scheduler, e *readpool.Entry) {
			require.Same(t, e, s.Pop(readpool.Forever))
		}},
		{"released when due", func(s *Scheduler, e *readpool.Entry) {
			_, until := s.Held()
			require.Same(t, e, s.Pop(until))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, s := newScheduler(t, GroupConfig{Name: "slow", RUPerSec: 1})
			g := m.Resolve("slow")
			s.Charge(entry(g), readpool.Usage{Exec: 33 * time.Millisecond}) // the bucket and ~10 RU more
			e := entry(g)
			s.Push(e, time.Second)
			n, until := s.Held()
			require.Equal(t, 1, n)
			planned := until - time.Second
			require.Greater(t, planned, 5*time.Second)
			c.end(s, e)
			throttled := groupStats(t, m, "slow").Throttled
			if c.name == "released when due" {
				assert.Equal(t, planned, throttled, "the whole wait was taken")
			} else {
				assert.Zero(t, throttled, "no wait was taken")
			}
		})
	}
}

// TestScheduler_BackgroundSetsNoTenantsVirtualTime: a tenant back from
// idleness while only the Background group runs starts where the tenants
// are, not at the Background group's virtual time, which its tiny share
// sends far ahead; nor does the pool emptying after it raise the floor.
func TestScheduler_BackgroundSetsNoTenantsVirtualTime(t *testing.T) {
	m, s := newScheduler(t, GroupConfig{Name: "a", Burstable: true}, GroupConfig{Name: "b", Burstable: true})
	a, b, bg := m.Resolve("a"), m.Resolve("b"), m.Background()

	s.Push(entry(a), 0)
	charge(s, popAll(s, 0)[0], 10*time.Millisecond, 0) // a: 10 ms of work
	aTime := a.vtime.Load()
	require.Positive(t, aTime)

	w := entry(bg)
	w.Priority = uint64(PriorityLow)
	s.Push(w, time.Second)
	charge(s, popAll(s, time.Second)[0], 10*time.Millisecond, time.Second)
	require.Greater(t, bg.vtime.Load(), 1000*aTime, "the same work moves the background far ahead")
	assert.LessOrEqual(t, s.floor, aTime, "the background leaves the floor where the tenants left it")

	s.Push(w, 2*time.Second) // the background runs again, alone
	s.Push(entry(b), 2*time.Second)
	assert.LessOrEqual(t, b.vtime.Load(), aTime, "b starts where the tenants are")
}

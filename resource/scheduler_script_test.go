package resource

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// TestScheduler_Scripts runs the scheduler scripts in testdata, as the
// readpool's queues have theirs: each drives a Scheduler as the pool does
// — spawns, pops, steps charged and filed, at given pool times — and
// states the order that results (go test -run TestScheduler_Scripts
// -rewrite, then read the diff). No goroutine; the pool time is passed in,
// and the manager's clock reads the same time.
//
//	new [cooled=N]                     a fresh manager and scheduler at 0,
//	                                   in the pool's cooldown (cooled: its
//	                                   CooledSlots)
//	group name=g [ru=R] [burstable] [prio=high|medium|low]
//	                                   puts a group's config (a change
//	                                   kicks: Pop looks at held tasks again)
//	spawn id=a [group=g] [prio=P] [max=N] [demoted] [at=T]
//	                                   a new task of group g (default: the
//	                                   default group; prio: the request's
//	                                   own), asked Admit with MaxTasks N
//	                                   (default 100), queued if admitted;
//	                                   prints its key or "busy"
//	pop [n=N] [at=T] [forever]         the next N tasks, or "none"
//	                                   (forever: Pop(Forever), Close's)
//	yield id=a used=D [demoted=B]      a's step ran for D, is charged, and
//	                                   the task goes on: pushed again, then
//	                                   Done (the pool's order); demoted: a
//	                                   Governor's verdict first
//	done id=a used=D                   the same, but the task ended
//	run n=N used=D [at=T]              N steps of one worker: pop, yield
//	                                   for D; prints the ids, in order
//	remove id=a                        the task ended while queued or held
//	groups                             each group's counts and clocks
//
// Steps move the clock on by D; at=T sets it, never back. A task's first
// step is charged as a request's (RU's 1/8).
func TestScheduler_Scripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var s schedScript
		datadriven.RunTest(t, path, s.run)
	})
}

// schedScript is one script's manager, scheduler, clock and tasks.
type schedScript struct {
	m       *Manager
	s       *Scheduler
	q       readpool.Queue // s in the pool's cooldown
	now     time.Duration
	es      map[string]*readpool.Entry
	ids     map[*readpool.Entry]string
	stepped map[*readpool.Entry]bool
}

func (s *schedScript) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && s.s == nil {
		d.Fatalf(t, "%s before new", d.Cmd)
	}
	if d.HasArg("at") {
		var at time.Duration
		d.ScanArgs(t, "at", &at)
		if at < s.now {
			d.Fatalf(t, "at=%v is before the clock's %v", at, s.now)
		}
		s.now = at
	}
	switch d.Cmd {
	case "new":
		s.m = NewManager()
		s.m.clock = func() time.Duration { return s.now }
		s.s = NewScheduler(s.m)
		var cooled int
		d.MaybeScanArgs(t, "cooled", &cooled)
		s.q = readpool.WithCooldown(s.s, cooled)
		s.s.SetKick(func() {})
		s.now = 0
		s.es, s.ids, s.stepped = map[string]*readpool.Entry{}, map[*readpool.Entry]string{}, map[*readpool.Entry]bool{}
		return ""
	case "group":
		cfg := GroupConfig{Burstable: d.HasArg("burstable")}
		d.ScanArgs(t, "name", &cfg.Name)
		d.MaybeScanArgs(t, "ru", &cfg.RUPerSec)
		cfg.Priority = scanPriority(t, d)
		require.NoError(t, s.m.Put(cfg))
		return ""
	case "spawn":
		var id string
		d.ScanArgs(t, "id", &id)
		if _, ok := s.es[id]; ok {
			d.Fatalf(t, "task %s exists", id)
		}
		group := DefaultGroup
		d.MaybeScanArgs(t, "group", &group)
		e := &readpool.Entry{Group: group, Tag: s.m.Resolve(group), Priority: uint64(scanPriority(t, d)), Demoted: d.HasArg("demoted")}
		maxTasks := 100
		d.MaybeScanArgs(t, "max", &maxTasks)
		if !s.s.Admit(e, maxTasks) {
			return id + " busy"
		}
		s.es[id], s.ids[e] = e, id
		s.q.Push(e, s.now)
		return s.placed(e)
	case "pop":
		n := 1
		d.MaybeScanArgs(t, "n", &n)
		at := s.now
		if d.HasArg("forever") {
			at = readpool.Forever
		}
		var out []string
		for range n {
			e := s.q.Pop(at)
			if e == nil {
				out = append(out, "none")
				continue
			}
			out = append(out, fmt.Sprintf("%s %s", s.ids[e], s.key(uint64(e.Class))))
		}
		return strings.Join(out, "\n")
	case "yield", "done":
		e := s.entry(t, d)
		if e.Queued() {
			d.Fatalf(t, "task %s is queued: pop it first", s.ids[e])
		}
		var used time.Duration
		d.ScanArgs(t, "used", &used)
		d.MaybeScanArgs(t, "demoted", &e.Demoted)
		s.step(e, used, d.Cmd == "yield")
		if d.Cmd == "yield" {
			return s.placed(e)
		}
		return ""
	case "run":
		var n int
		var used time.Duration
		d.ScanArgs(t, "n", &n)
		d.ScanArgs(t, "used", &used)
		var b strings.Builder
		for i := range n {
			e := s.q.Pop(s.now)
			if e == nil {
				d.Fatalf(t, "nothing to pop at step %d", i)
			}
			s.step(e, used, true)
			switch {
			case i == 0:
			case i%20 == 0:
				b.WriteByte('\n')
			default:
				b.WriteByte(' ')
			}
			b.WriteString(s.ids[e])
		}
		return b.String()
	case "remove":
		return fmt.Sprint(s.q.Remove(s.entry(t, d)))
	case "groups":
		var b strings.Builder
		n, until := s.q.Held()
		fmt.Fprintf(&b, "ready=%d held=%d", s.q.Len(), n)
		if n > 0 {
			fmt.Fprintf(&b, " until=%v", until)
		}
		for _, g := range s.m.Stats() {
			fmt.Fprintf(&b, "\n%s: queued=%d running=%d held=%d vt=%v ru=%.3f throttled=%v rejected=%d",
				g.Name, g.Queued, g.Running, g.Held, g.VirtualTime, g.RU, g.Throttled, g.RejectedBusy)
		}
		return b.String()
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// step accounts a step of popped e that ran for used, as the pool does:
// charged, then pushed again if the task goes on, then Done.
func (s *schedScript) step(e *readpool.Entry, used time.Duration, goesOn bool) {
	e.Elapsed += used
	s.now += used
	s.s.Charge(e, readpool.Usage{Exec: used, First: !s.stepped[e]})
	s.stepped[e] = true
	if goesOn {
		s.q.Push(e, s.now)
	}
	s.q.Done(e, used, s.now)
}

// placed says where a pushed task went: its key, or held until when.
func (s *schedScript) placed(e *readpool.Entry) string {
	if e.QueueState&qsHeld != 0 {
		return fmt.Sprintf("%s held until=%v", s.ids[e], time.Duration(e.Key))
	}
	if e.QueueState&qsCooled != 0 {
		return fmt.Sprintf("%s waits for a cooled slot", s.ids[e])
	}
	return fmt.Sprintf("%s %s level=%d", s.ids[e], s.key(e.Key), e.Level)
}

// key spells a key (or a popped step's class): its class, then its
// virtual time with the level's penalty.
func (s *schedScript) key(k uint64) string {
	return fmt.Sprintf("class=%s vt=%v", []string{"high", "medium", "low"}[k>>classShift], time.Duration(k&maxVTime))
}

func (s *schedScript) entry(t *testing.T, d *datadriven.TestData) *readpool.Entry {
	var id string
	d.ScanArgs(t, "id", &id)
	e, ok := s.es[id]
	if !ok {
		d.Fatalf(t, "no task %s", id)
	}
	return e
}

// scanPriority reads prio=, if given, as ParsePriority does; 0 if not.
func scanPriority(t *testing.T, d *datadriven.TestData) Priority {
	var v string
	if !d.MaybeScanArgs(t, "prio", &v) {
		return 0
	}
	p, err := ParsePriority(v)
	require.NoError(t, err)
	return p
}

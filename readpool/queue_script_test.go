package readpool

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestQueue_Scripts runs the queue scripts in testdata, as Pebble tests
// its own policies: each drives one queue as the pool would — pushes,
// pops, steps of given lengths at given pool times — and states the order
// that results, so that a policy change shows as a changed script (go
// test -run TestQueue_Scripts -rewrite, then read the diff). No goroutine,
// no clock: the time is passed in.
//
//	new kind=fifo|work-stealing|mlfq [cooled=N]
//	                                   a fresh queue at time 0, in the
//	                                   pool's cooldown (cooled: its
//	                                   CooledSlots)
//	push id=a [task=N] [level=L] [short] [demoted] [at=T]
//	                                   a new task is ready (task: its TaskID;
//	                                   level: pinned there); prints its level,
//	                                   or "held" when it waits for a cooled
//	                                   slot
//	pop [n=N] [at=T] [forever]         the next N entries to step, with the
//	                                   class each steps at, or "none"
//	                                   (forever: Pop(Forever), Close's)
//	popurgent / popbatch first=a       UrgentPopper's and Batcher's pops
//	yield id=a used=D [demoted=B]      a's step ran for D and the task goes
//	                                   on: pushed again, then Done (the
//	                                   pool's order); prints its level
//	                                   (demoted: a Governor's verdict first)
//	done id=a used=D                   a's step ran for D and the task ended
//	                                   (or waits for a wake): Done
//	run n=N used=D                     N steps of one worker: pop, yield for
//	                                   D; prints the ids popped, in order
//	remove id=a                        the task ended while queued
//	inline id=a [task=N] [level=L] [short]
//	                                   MayInline's answer for an arrival
//	stats                              Len, the preemption hint, the levels
//	held                               Held: the count, and until when
//
// yield and done move the clock on by D (one worker ran the step); at=T
// sets it, never back.
func TestQueue_Scripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var s queueScript
		datadriven.RunTest(t, path, s.run)
	})
}

// queueScript is one script's queue, its clock and its entries by id.
type queueScript struct {
	q *cooledQueue
	// base is the queue inside q, for its optional capabilities.
	base Queue
	now  time.Duration
	es   map[string]*Entry
	ids  map[*Entry]string
}

func (s *queueScript) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && s.q == nil {
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
		var kind string
		d.ScanArgs(t, "kind", &kind)
		switch kind {
		case "fifo":
			s.base = NewFIFO()
		case "work-stealing":
			s.base = NewWorkStealing()
		case "mlfq":
			s.base = NewMLFQ(MLFQOptions{})
		default:
			d.Fatalf(t, "unknown queue %q", kind)
		}
		var cooled int
		d.MaybeScanArgs(t, "cooled", &cooled)
		s.q = newCooledQueue(s.base, cooled)
		s.now, s.es, s.ids = 0, map[string]*Entry{}, map[*Entry]string{}
		return ""
	case "push":
		e := s.newEntry(t, d)
		s.q.Push(e, s.now)
		return s.level(e)
	case "inline":
		e := s.newEntry(t, d)
		if !s.q.MayInline(e) {
			return "no"
		}
		return fmt.Sprintf("yes class=%d", e.Class)
	case "pop":
		n := 1
		d.MaybeScanArgs(t, "n", &n)
		at := s.now
		if d.HasArg("forever") {
			at = Forever // Close's drain
		}
		var out []string
		for range n {
			out = append(out, s.popped(s.q.Pop(at)))
		}
		return strings.Join(out, "\n")
	case "popurgent":
		return s.popped(s.base.(UrgentPopper).PopUrgent(s.now))
	case "popbatch":
		return s.popped(s.base.(Batcher).PopBatch(s.entry(t, d, "first"), s.now))
	case "yield", "done":
		e := s.entry(t, d, "id")
		if e.Queued() {
			d.Fatalf(t, "task %s is queued: pop it first", s.ids[e])
		}
		var used time.Duration
		d.ScanArgs(t, "used", &used)
		d.MaybeScanArgs(t, "demoted", &e.Demoted)
		s.step(e, used, d.Cmd == "yield")
		if d.Cmd == "yield" {
			return s.level(e)
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
		return fmt.Sprint(s.q.Remove(s.entry(t, d, "id")))
	case "stats":
		return s.stats()
	case "held":
		n, until := s.q.Held()
		if n == 0 {
			return "held=0"
		}
		return fmt.Sprintf("held=%d until=%v", n, until)
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// step accounts a step of popped e that ran for used, as the pool does: a
// task that goes on is pushed again before Done.
func (s *queueScript) step(e *Entry, used time.Duration, goesOn bool) {
	e.Elapsed += used
	s.now += used
	if goesOn {
		s.q.Push(e, s.now)
	}
	s.q.Done(e, used, s.now)
}

// newEntry makes the entry of a task arriving, named by its id argument.
func (s *queueScript) newEntry(t *testing.T, d *datadriven.TestData) *Entry {
	var id string
	d.ScanArgs(t, "id", &id)
	if _, ok := s.es[id]; ok {
		d.Fatalf(t, "task %s exists: yield requeues it", id)
	}
	e := &Entry{Short: d.HasArg("short"), Demoted: d.HasArg("demoted")}
	d.MaybeScanArgs(t, "task", &e.TaskID)
	if d.HasArg("level") {
		e.Fixed = true
		d.ScanArgs(t, "level", &e.FixedLevel)
	}
	s.es[id], s.ids[e] = e, id
	return e
}

// entry is the entry named by argument key.
func (s *queueScript) entry(t *testing.T, d *datadriven.TestData, key string) *Entry {
	var id string
	d.ScanArgs(t, key, &id)
	e, ok := s.es[id]
	if !ok {
		d.Fatalf(t, "no task %s", id)
	}
	return e
}

// level is where e was queued, or "held" while it waits for a cooled slot.
func (s *queueScript) level(e *Entry) string {
	if e.list == &s.q.cool.waiting {
		return s.ids[e] + " held"
	}
	return fmt.Sprintf("%s level=%d", s.ids[e], e.Level)
}

func (s *queueScript) popped(e *Entry) string {
	if e == nil {
		return "none"
	}
	return fmt.Sprintf("%s class=%d", s.ids[e], e.Class)
}

func (s *queueScript) stats() string {
	var b strings.Builder
	st := s.q.Stats()
	pre := "none"
	if p := s.q.Preemption().Load(); p != NoPreemption {
		pre = fmt.Sprintf("class>%d", p)
	}
	fmt.Fprintf(&b, "%s len=%d preempt=%s", st.Kind, s.q.Len(), pre)
	if st.Kind == "mlfq" {
		fmt.Fprintf(&b, " level0-share=%.2f chance=%.2f", st.Level0Share, st.Chance)
	}
	for i, l := range st.Levels {
		fmt.Fprintf(&b, "\nlevel %d: queued=%d steps=%d time=%v", i, l.Queued, l.Steps, l.Time)
	}
	return b.String()
}

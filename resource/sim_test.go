package resource

import (
	"flag"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// Randomised tests draw from -seed (0 = a fresh seed, logged) and run
// -sim.rounds cases; the defaults are CI-sized and replayable.
var (
	seedFlag  = flag.Uint64("seed", 1, "seed of the randomised scheduler tests; 0 = a fresh one, logged")
	roundFlag = flag.Int("sim.rounds", 10, "cases each randomised scheduler test runs")
)

// newRand returns the test's seeded source and logs the seed to replay it.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// stepCost is what one step of a simulated entry consumes.
type stepCost struct {
	exec  time.Duration
	bytes int64
}

// sim drives a Scheduler as a pool would, on a simulated clock, with no
// goroutines: W workers pop entries, step them for the cost of their group,
// charge the step, queue the entry again (Push before Done, as the pool
// files a yield) and account the step.
type sim struct {
	t       *testing.T
	m       *Manager
	s       *Scheduler
	now     time.Duration
	workers int
	// cost is the cost of an entry's next step; by default its group's.
	cost    func(e *readpool.Entry) stepCost
	costs   map[*Group]stepCost
	running []simRun
	stepped map[*readpool.Entry]bool
	// left, when set for an entry, is how many steps it has before it
	// finishes (and is not queued again).
	left  map[*readpool.Entry]int
	steps map[*Group]int
}

type simRun struct {
	e   *readpool.Entry
	end time.Duration
	c   stepCost
}

func newSim(t *testing.T, workers int) *sim {
	t.Helper()
	m := NewManager()
	sm := &sim{
		t: t, m: m, s: NewScheduler(m), workers: workers,
		costs:   map[*Group]stepCost{},
		stepped: map[*readpool.Entry]bool{},
		left:    map[*readpool.Entry]int{},
		steps:   map[*Group]int{},
	}
	// The RU window reads the simulated clock.
	m.clock = func() time.Duration { return sm.now }
	return sm
}

// group creates the group cfg with the given step cost.
func (sm *sim) group(cfg GroupConfig, c stepCost) *Group {
	sm.t.Helper()
	require.NoError(sm.t, sm.m.Put(cfg))
	g := sm.m.Resolve(cfg.Name)
	require.Equal(sm.t, cfg.Name, g.Name())
	sm.costs[g] = c
	return g
}

// spawn pushes n fresh entries of g at the current time.
func (sm *sim) spawn(g *Group, n int) []*readpool.Entry {
	es := make([]*readpool.Entry, n)
	for i := range es {
		es[i] = &readpool.Entry{Tag: g}
		sm.s.Push(es[i], sm.now)
	}
	return es
}

func (sm *sim) costOf(e *readpool.Entry) stepCost {
	if sm.cost != nil {
		return sm.cost(e)
	}
	return sm.costs[e.Tag.(*Group)]
}

// run simulates d of pool time. It fails the test if the queue runs dry
// (nothing ready, running or held), which no saturating workload should.
func (sm *sim) run(d time.Duration) {
	sm.t.Helper()
	end := sm.now + d
	for sm.now < end {
		for len(sm.running) < sm.workers {
			e := sm.s.Pop(sm.now)
			if e == nil {
				break
			}
			c := sm.costOf(e)
			require.Positive(sm.t, c.exec, "a step takes time")
			sm.running = append(sm.running, simRun{e: e, end: sm.now + c.exec, c: c})
		}
		next := time.Duration(-1)
		if len(sm.running) > 0 {
			slices.SortStableFunc(sm.running, func(a, b simRun) int { return int(a.end - b.end) })
			next = sm.running[0].end
		}
		if len(sm.running) < sm.workers {
			// An idle worker: a held entry may become ready first.
			if n, until := sm.s.Held(); n > 0 && (next < 0 || until < next) {
				require.Greater(sm.t, until, sm.now, "a held entry due now should have popped")
				sm.now = min(until, end)
				continue
			}
		}
		if next < 0 {
			require.Fail(sm.t, "the queue ran dry", "at %v", sm.now)
			return
		}
		if next > end {
			sm.now = end
			return
		}
		r := sm.running[0]
		sm.running = sm.running[1:]
		sm.now = r.end
		sm.finish(r)
	}
}

// finish files a step that has ended, as the pool's fileLocked does.
func (sm *sim) finish(r simRun) {
	e := r.e
	e.Elapsed += r.c.exec
	first := !sm.stepped[e]
	sm.stepped[e] = true
	sm.s.Charge(e, readpool.Usage{Exec: r.c.exec, Bytes: r.c.bytes, First: first})
	sm.steps[sm.s.groupOf(e)]++
	if n, ok := sm.left[e]; ok {
		if n <= 1 {
			delete(sm.left, e)
			sm.s.Done(e, r.c.exec, sm.now)
			return
		}
		sm.left[e] = n - 1
	}
	sm.s.Push(e, sm.now) // Push before Done, as the pool requeues
	sm.s.Done(e, r.c.exec, sm.now)
}

// ru returns each named group's RU consumed so far.
func (sm *sim) ru() map[string]float64 {
	out := map[string]float64{}
	for _, st := range sm.m.Stats() {
		out[st.Name] = st.RU
	}
	return out
}

// stats returns the named group's figures.
func (sm *sim) stats(name string) GroupStats {
	sm.t.Helper()
	for _, st := range sm.m.Stats() {
		if st.Name == name {
			return st
		}
	}
	require.Fail(sm.t, "no such group", name)
	return GroupStats{}
}

// delta is b - a per group.
func delta(a, b map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range b {
		out[k] = v - a[k]
	}
	return out
}

package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

// plainStore is a kv.Store and nothing more: it hides what only *kv.DB
// has (resource groups, Flush, stats), as a store of another backend
// would not have them.
type plainStore struct{ kv.Store }

func hideDB(db *kv.DB) kv.Store { return plainStore{db} }

// TestRun_StoreThatIsNotDB runs workloads on a kv.Store that is not a
// *kv.DB: the engine needs nothing but the interface for them — the load
// without a flush, noisy with its quiet phase, soak's writes and checks.
func TestRun_StoreThatIsNotDB(t *testing.T) {
	for _, name := range []string{"get", "noisy", "soak"} {
		t.Run(name, func(t *testing.T) {
			w := lookup(t, name)
			opened := 0
			stores := &testStores{dir: t.TempDir(), wrap: func(db *kv.DB) kv.Store {
				opened++
				return hideDB(db)
			}}
			cfg := parseRun(t, w, "--schedulers", "mlfq,direct", "--warmup", "0s")
			rep, out := runWith(t, cfg, w, stores)
			assert.Equal(t, 3, opened, "the load's store and one per scheduler, each a plainStore")
			require.NotEmpty(t, rep.Results)
			var scheds []string
			for _, r := range rep.Results {
				assert.Positive(t, r.Ops, "%s %s %s did nothing", r.Workload, r.Scheduler, r.Class)
				assert.Zero(t, r.Errors, "%s %s %s\n%s", r.Workload, r.Scheduler, r.Class, out)
				assert.Zero(t, r.RUPerSec, "no resource groups, no RU")
				if !slices.Contains(scheds, r.Scheduler) {
					scheds = append(scheds, r.Scheduler)
				}
			}
			assert.Equal(t, []string{"mlfq", "direct"}, scheds)
		})
	}
}

// TestRun_EveryWorkloadOnEveryScheduler runs each workload briefly on
// each scheduler: every class it reports does some work, without errors,
// and the results come in section, scheduler, class order, a quiet
// phase's Gets (noisy-quiet) just before its workload's on each
// scheduler. The groups workloads run once, on priority, with a result
// per group.
func TestRun_EveryWorkloadOnEveryScheduler(t *testing.T) {
	schedulers := []string{"mlfq", "fifo", "steal", "direct", "priority"}
	for _, w := range Workloads() {
		t.Run(w.Name(), func(t *testing.T) {
			// 300 ms, not tinyArgs' 200: on a loaded machine a class may
			// do nothing in 200 ms (seen here, with the old runner too).
			args := []string{"--schedulers", "mlfq,fifo,steal,direct,priority", "--duration", "300ms"}
			switch w.(type) {
			case *groupsLoad:
				// capped's 4% of a small rate needs longer.
				args = append(args, "--duration", "500ms")
			case *runawayLoad:
				// A rule that ends no read: every class does work and
				// none fails (TestRun_Runaway kills).
				args = append(args, "--action", "dryrun")
			}
			rep, out := runTiny(t, w, args...)
			var want [][4]string
			if g, ok := w.(*groupsLoad); ok {
				want = groupResultIDs(g)
			} else {
				want = plainResultIDs(w, w.Schedulers(schedulers))
			}
			var got [][4]string
			for _, r := range rep.Results {
				id := [4]string{r.Workload, r.Scheduler, r.Class, r.Group}
				got = append(got, id)
				if _, ok := w.(*groupsLoad); ok {
					// A group's reads are charged step by step: on a slow
					// machine a low-share group (capped's 4% of a small
					// rate) may finish no scan in 200 ms, but it runs.
					assert.True(t, r.Ops > 0 || r.RUPerSec > 0, "%v did nothing", id)
				} else {
					assert.Positive(t, r.Ops, "%v did nothing", id)
				}
				assert.Zero(t, r.Errors, "%v\n%s", id, out)
			}
			assert.Equal(t, want, got)
		})
	}
}

// plainResultIDs are the (workload, scheduler, class, group) of the
// results of w, a workload run on each of schedulers: its measured
// phases', section by section, each scheduler's after the other.
func plainResultIDs(w Workload, schedulers []string) [][4]string {
	var sections []string
	for _, p := range w.Phases() {
		if !slices.Contains(sections, p.Section) {
			sections = append(sections, p.Section)
		}
	}
	var ids [][4]string
	for _, section := range sections {
		for _, s := range schedulers {
			for _, p := range w.Phases() {
				if p.Section != section || p.Warmup {
					continue
				}
				name := p.Workload
				if name == "" {
					name = p.Section
				}
				for _, c := range p.Classes {
					ids = append(ids, [4]string{name, s, c.String(), ""})
				}
			}
		}
	}
	return ids
}

// --trace writes a runtime trace of the run.
func TestRun_Trace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trace")
	runTiny(t, lookup(t, "get"), "--schedulers", "mlfq", "--duration", "50ms", "--warmup", "0s", "--trace", path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("go 1.")), "a Go execution trace, its header first")
	assert.Greater(t, len(b), 1000)
}

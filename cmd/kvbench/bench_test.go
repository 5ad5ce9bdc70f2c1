package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tinyArgs make a run CI-sized: a small store, short phases, short scans.
var tinyArgs = []string{
	"--keys", "2000", "--duration", "200ms", "--warmup", "50ms",
	"--scan-len", "100", "--long-scan-len", "500", "--scanners", "2", "--clients", "2",
}

// runTiny runs kvbench with tinyArgs and args, writing JSON, and returns
// the report it wrote and what it printed.
func runTiny(t *testing.T, args ...string) (*report, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.json")
	out, err := execute(t, append(append(slices.Clone(tinyArgs), "--json", path), args...)...)
	require.NoError(t, err, out)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(b, &rep))
	return &rep, out
}

// TestRun_EveryWorkloadOnEveryScheduler runs each workload briefly on
// each scheduler, in one run (one load): every class a workload reports
// does some work, without errors, and the results come in workload,
// scheduler, class order. The groups workloads run once, on priority, with
// a result per group.
func TestRun_EveryWorkloadOnEveryScheduler(t *testing.T) {
	rep, out := runTiny(t, "--workload", strings.Join(workloadNames(), ","),
		"--schedulers", strings.Join(knownSchedulers, ","), "--group-scanners", "2", "-q")
	var want, got [][4]string
	for _, r := range rep.Results {
		got = append(got, [4]string{r.Workload, r.Scheduler, r.Class, r.Group})
	}
	for _, w := range workloadList {
		t.Run(w.name, func(t *testing.T) {
			var ids [][4]string
			if w.groups != nil {
				ids = groupResultIDs(w)
			} else {
				for _, s := range knownSchedulers {
					for _, c := range w.classes {
						ids = append(ids, [4]string{w.name, s, c.String(), ""})
					}
				}
			}
			for _, id := range ids {
				want = append(want, id)
				i := slices.Index(got, id)
				if !assert.GreaterOrEqual(t, i, 0, "no result for %v", id) {
					continue
				}
				r := rep.Results[i]
				assert.Positive(t, r.Ops, "%v did nothing", id)
				assert.Zero(t, r.Errors, "%v\n%s", id, out)
			}
		})
	}
	assert.Equal(t, want, got)
}

// TestRun_JSONAndPlot decodes what a tiny run wrote and checks every
// field, and that the plot was written.
func TestRun_JSONAndPlot(t *testing.T) {
	dir := t.TempDir()
	jsonPath, plotPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "latency.png")
	out, err := execute(t, append(slices.Clone(tinyArgs),
		"--workload", "noisy,ycsb-a", "--schedulers", "mlfq,direct", "--json", jsonPath, "--plot", plotPath)...)
	require.NoError(t, err, out)

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	results, ok := doc["results"].([]any)
	require.True(t, ok, "results is a list")
	assert.Equal(t, map[string]any{
		"workload":   "noisy,ycsb-a",
		"keys":       2000.0,
		"value_size": 100.0,
		"workers":    float64(runtime.GOMAXPROCS(0)),
		"duration_s": 0.2,
		"results":    results,
	}, doc)

	want := [][3]string{
		{"noisy", "mlfq", "get"}, {"noisy", "mlfq", "scan"},
		{"noisy", "direct", "get"}, {"noisy", "direct", "scan"},
		{"ycsb-a", "mlfq", "get"}, {"ycsb-a", "mlfq", "update"},
		{"ycsb-a", "direct", "get"}, {"ycsb-a", "direct", "update"},
	}
	require.Len(t, results, len(want))
	fields := []string{"workload", "scheduler", "class", "group", "ops", "ops_per_sec",
		"p50_us", "p99_us", "p999_us", "max_us", "errors"}
	for i, x := range results {
		r, ok := x.(map[string]any)
		require.True(t, ok)
		var keys []string
		for k := range r {
			keys = append(keys, k)
		}
		assert.ElementsMatch(t, fields, keys, "result %d has exactly the fields", i)
		assert.Equal(t, want[i], [3]string{r["workload"].(string), r["scheduler"].(string), r["class"].(string)})
		assert.Equal(t, "", r["group"])
		ops := r["ops"].(float64)
		assert.Positive(t, ops)
		assert.Equal(t, ops, float64(int64(ops)), "ops is a count")
		assert.InEpsilon(t, ops/0.2, r["ops_per_sec"], 0.2, "ops_per_sec is ops over the duration")
		p50, p99, p999, maxUs := r["p50_us"].(float64), r["p99_us"].(float64), r["p999_us"].(float64), r["max_us"].(float64)
		assert.Positive(t, p50)
		assert.LessOrEqual(t, p50, p99)
		assert.LessOrEqual(t, p99, p999)
		assert.LessOrEqual(t, p999, maxUs)
		assert.Equal(t, 0.0, r["errors"])
	}

	img, err := os.ReadFile(plotPath)
	require.NoError(t, err)
	assert.Greater(t, len(img), 1000)
	assert.Equal(t, "\x89PNG", string(img[:4]))

	// The same results went to the table.
	assert.Regexp(t, `(?m)^workload +scheduler +class +ops/s +p50 +p99 +p99.9 +max +errors$`, out)
	for _, w := range want {
		assert.Regexp(t, `(?m)^`+w[0]+` +`+w[1]+` +`+w[2]+` `, out)
	}
}

// TestRun_Output checks the progress lines (stdout is not a terminal
// here), and that -q leaves only the table.
func TestRun_Output(t *testing.T) {
	args := []string{"--workload", "get", "--schedulers", "fifo"}
	_, out := runTiny(t, args...)
	for _, line := range []string{"load: 2000 keys", "fifo get warm-up: 50ms", "fifo get: 200ms"} {
		assert.Contains(t, out, line+"\n")
	}
	assert.Contains(t, out, "seed 1")

	_, out = runTiny(t, append(args, "-q")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"workload", "scheduler", "class", "ops/s", "p50", "p99", "p99.9", "max", "errors"},
		strings.Fields(lines[0]))
}

// TestRun_Dirs checks that a run's temporary store is removed and a
// --dir store is kept.
func TestRun_Dirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	runTiny(t, "--workload", "get", "--schedulers", "direct", "-q")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "the temporary store is removed")

	dir := filepath.Join(t.TempDir(), "store")
	runTiny(t, "--workload", "get", "--schedulers", "direct", "--dir", dir, "-q")
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "the --dir store is kept")

	// And it can be run on again.
	rep, _ := runTiny(t, "--workload", "scan", "--schedulers", "mlfq", "--dir", dir, "-q")
	assert.Positive(t, rep.Results[0].Ops)
}

func TestRun_UsageErrorRunsNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out, err := execute(t, "--workload", "nope")
	require.Error(t, err)
	assert.Equal(t, 2, exitStatus(err))
	assert.Empty(t, out, "no usage dump, nothing run (main prints the one-line error)")
	entries, _ := os.ReadDir(tmp)
	assert.Empty(t, entries)
}

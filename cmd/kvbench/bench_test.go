package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/cmd/internal/cli"
)

// tinyArgs make a run CI-sized: a small store, short phases.
var tinyArgs = []string{"--keys", "2000", "--duration", "200ms", "--warmup", "50ms"}

// tinyNoisy are noisy's flags for a CI-sized run: short scans, few
// clients.
var tinyNoisy = []string{"--long-scan-len", "500", "--scanners", "2", "--clients", "2"}

// tiny returns workload's subcommand ("" for none: noisy), tinyArgs and
// args, with tinyNoisy for noisy.
func tiny(workload string, args ...string) []string {
	var out []string
	if workload != "" {
		out = append(out, workload)
	}
	out = append(out, tinyArgs...)
	if workload == "" || workload == "noisy" {
		out = append(out, tinyNoisy...)
	}
	return append(out, args...)
}

// runTiny runs kvbench with args, writing JSON, and returns the report
// it wrote and what it printed to stdout.
func runTiny(t *testing.T, args ...string) (*bench.Report, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out.json")
	out, errOut, err := execute(t, append(slices.Clone(args), "--json", path)...)
	require.NoError(t, err, errOut)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	return &rep, out
}

// TestRun_DefaultIsNoisy: a bare kvbench runs noisy — its quiet phase
// and its measured phase on mlfq, fifo and direct, and the lines under
// the table — as "kvbench noisy" does.
func TestRun_DefaultIsNoisy(t *testing.T) {
	rep, out := runTiny(t, tiny("", "--warmup", "0s", "--duration", "100ms", "-q")...)
	assert.Equal(t, "noisy", rep.Workload)
	var got [][3]string
	for _, r := range rep.Results {
		got = append(got, [3]string{r.Workload, r.Scheduler, r.Class})
	}
	var want [][3]string
	for _, s := range []string{"mlfq", "fifo", "direct"} {
		want = append(want, [3]string{"noisy-quiet", s, "get"}, [3]string{"noisy", s, "get"}, [3]string{"noisy", s, "scan"})
	}
	assert.Equal(t, want, got)
	assert.Regexp(t, `(?m)^noisy mlfq: get e2e p99 \S+ quiet, \S+ beside 2 scanners = `, out)
	assert.Regexp(t, `(?m)^noisy: fifo e2e p99 \S+ ÷ mlfq e2e p99 \S+ = `, out)

	sub, _ := runTiny(t, tiny("noisy", "--warmup", "0s", "--duration", "100ms", "-q")...)
	assert.Equal(t, rep.Workload, sub.Workload)
	var subGot [][3]string
	for _, r := range sub.Results {
		subGot = append(subGot, [3]string{r.Workload, r.Scheduler, r.Class})
	}
	assert.Equal(t, got, subGot, "kvbench is kvbench noisy")
}

// TestRun_JSONAndPlot decodes what a tiny run wrote and checks every
// field, and that the plot was written.
func TestRun_JSONAndPlot(t *testing.T) {
	dir := t.TempDir()
	jsonPath, plotPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "latency.png")
	out, errOut, err := execute(t, tiny("noisy", "--schedulers", "mlfq,direct", "--json", jsonPath, "--plot", plotPath)...)
	require.NoError(t, err, errOut)

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	results, ok := doc["results"].([]any)
	require.True(t, ok, "results is a list")
	assert.Equal(t, map[string]any{
		"workload":   "noisy",
		"keys":       2000.0,
		"value_size": 100.0,
		"workers":    float64(runtime.GOMAXPROCS(0)),
		"duration_s": 0.2,
		"results":    results,
	}, doc)

	want := [][3]string{
		{"noisy-quiet", "mlfq", "get"}, {"noisy", "mlfq", "get"}, {"noisy", "mlfq", "scan"},
		{"noisy-quiet", "direct", "get"}, {"noisy", "direct", "get"}, {"noisy", "direct", "scan"},
	}
	require.Len(t, results, len(want))
	fields := []string{"workload", "scheduler", "class", "group", "ops", "ops_per_sec",
		"p50_us", "p99_us", "p999_us", "max_us", "errors"}
	// noisy's Gets, quiet or not, are paced: they have these too.
	pacedFields := append(slices.Clone(fields), "arrival", "offered_per_sec", "achieved_pct", "overdue",
		"service_p50_us", "service_p99_us", "service_p999_us", "service_max_us",
		"late_p50_us", "late_p99_us", "late_p999_us", "late_max_us")
	for i, x := range results {
		r, ok := x.(map[string]any)
		require.True(t, ok)
		var keys []string
		for k := range r {
			if k == "overrun_ms" {
				// How long the phase's clients took to stop: present
				// when they did not stop at once.
				assert.Less(t, r[k], 1000.0, "result %d: the phase ended on time", i)
				continue
			}
			keys = append(keys, k)
		}
		switch want[i][2] {
		case "get":
			assert.ElementsMatch(t, pacedFields, keys, "result %d has exactly the fields", i)
			assert.Equal(t, "fixed", r["arrival"])
		case "scan": // the rows they read, too
			assert.ElementsMatch(t, append(slices.Clone(fields), "rows", "rows_per_sec"), keys, "result %d has exactly the fields", i)
			assert.GreaterOrEqual(t, r["rows"], r["ops"].(float64)*500, "each scan read --long-scan-len 500 rows")
		default:
			assert.ElementsMatch(t, fields, keys, "result %d has exactly the fields", i)
		}
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
	assert.Regexp(t, `(?m)^workload +scheduler +class +ops/s +offered/s +achieved +rows/s +p50 +p99 +p99.9 +max +errors$`, out)
	for _, w := range want {
		assert.Regexp(t, `(?m)^`+w[0]+` +`+w[1]+` +`+w[2]+` `, out)
	}
}

// TestRun_Output checks that the progress lines (stderr is not a
// terminal here) go to stderr, and only the results to stdout; and that
// -q leaves stderr empty.
func TestRun_Output(t *testing.T) {
	args := tiny("get", "--schedulers", "fifo")
	out, errOut, err := execute(t, args...)
	require.NoError(t, err, errOut)
	for _, line := range []string{"load: 2000 keys", "fifo get warm-up: 50ms", "fifo get: 200ms"} {
		assert.Contains(t, errOut, line+"\n")
	}
	assert.Contains(t, errOut, "seed 1")
	assert.NotContains(t, errOut, "workload")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"workload", "scheduler", "class", "ops/s", "p50", "p99", "p99.9", "max", "errors"},
		strings.Fields(lines[0]))
	assert.Equal(t, []string{"get", "fifo", "get"}, strings.Fields(lines[1])[:3])

	quietOut, errOut, err := execute(t, append(args, "-q")...)
	require.NoError(t, err, errOut)
	assert.Empty(t, errOut)
	assert.Len(t, strings.Split(strings.TrimSpace(quietOut), "\n"), 2, quietOut)
}

// TestRun_JSONToStdout checks that --json - writes the JSON alone to
// stdout, and the table to stderr.
func TestRun_JSONToStdout(t *testing.T) {
	out, errOut, err := execute(t, tiny("get", "--schedulers", "direct", "--json", "-", "-q")...)
	require.NoError(t, err, errOut)
	var rep bench.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "stdout is the JSON and nothing else:\n%s", out)
	require.Len(t, rep.Results, 1)
	assert.Equal(t, "direct", rep.Results[0].Scheduler)
	assert.Positive(t, rep.Results[0].Ops)
	assert.False(t, rep.Interrupted)
	assert.Regexp(t, `(?m)^workload +scheduler +class +ops/s`, errOut, "the table goes to stderr")
	assert.Regexp(t, `(?m)^get +direct +get +\d+ `, errOut)
}

// TestRun_Dirs checks that a run's temporary store is removed and a
// --dir store is kept.
func TestRun_Dirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	runTiny(t, tiny("get", "--schedulers", "direct", "-q")...)
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "the temporary store is removed")

	dir := filepath.Join(t.TempDir(), "store")
	runTiny(t, tiny("get", "--schedulers", "direct", "--dir", dir, "-q")...)
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "the --dir store is kept")

	// And it can be run on again.
	rep, _ := runTiny(t, tiny("scan", "--schedulers", "mlfq", "--dir", dir, "-q")...)
	assert.Positive(t, rep.Results[0].Ops)
}

func TestRun_UsageErrorRunsNothing(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out, errOut, err := execute(t, "nope")
	require.Error(t, err)
	assert.Equal(t, 2, exitStatus(err))
	assert.Empty(t, out, "nothing run")
	assert.Empty(t, errOut, "no usage dump (main prints the one-line error)")
	entries, _ := os.ReadDir(tmp)
	assert.Empty(t, entries)
}

// TestRun_Interrupted stops a run (as Ctrl-C does: its context ends)
// during its second measured phase, noisy's own after its quiet phase:
// the first phase's results are printed and written as usual, the
// second's marked interrupted, and the run exits with 130.
func TestRun_Interrupted(t *testing.T) {
	dir := t.TempDir()
	jsonPath, plotPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "latency.svg")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errOut := newWatchedBuffer("direct noisy: 1s\n")
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- executeTo(ctx, &out, errOut, tiny("noisy", "--schedulers", "direct", "--duration", "1s", "--warmup", "0",
			"--json", jsonPath, "--plot", plotPath)...)
	}()
	select {
	case <-errOut.seen:
	case err := <-done:
		require.FailNow(t, "the run ended before its second phase", "%v\n%s", err, errOut)
	}
	// Let the phase measure a little; what it measures is not checked.
	stop := time.AfterFunc(50*time.Millisecond, cancel)
	defer stop.Stop()
	err := <-done
	require.Error(t, err)
	assert.ErrorIs(t, err, bench.ErrInterrupted)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 130, exitStatus(err))
	assert.Equal(t, "interrupted by context canceled during direct noisy", err.Error())

	assert.Regexp(t, `(?m)^workload +scheduler +class +ops/s +offered/s +achieved +rows/s +p50 +p99 +p99.9 +max +errors$`, out.String())
	assert.Regexp(t, `(?m)^noisy-quiet +direct +get e2e +\d+ .* 0$`, out.String(), "the phase done, unmarked")
	assert.Regexp(t, `(?m)^noisy +direct +scan +\d+ .* 0  \(interrupted\)$`, out.String())
	assert.Regexp(t, `(?m)^interrupted \(context canceled\) \d+ms into the 1s of direct noisy, whose figures, marked \(interrupted\), cover that part$`, out.String())
	assert.NotContains(t, errOut.String(), "workload", "the results are on stdout")

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.True(t, rep.Interrupted)
	require.Len(t, rep.Results, 3)
	assert.False(t, rep.Results[0].Interrupted)
	assert.Positive(t, rep.Results[0].Ops)
	assert.Equal(t, "noisy-quiet", rep.Results[0].Workload)
	for _, r := range rep.Results[1:] {
		assert.True(t, r.Interrupted)
		assert.Equal(t, "noisy", r.Workload)
	}
	_, err = os.Stat(plotPath)
	assert.NoError(t, err, "the plot is written")
}

// TestRun_InterruptedBeforeMeasuring stops a run before it has measured
// anything: it prints an empty table and says where it stopped, writes
// the JSON and no plot.
func TestRun_InterruptedBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	jsonPath, plotPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "latency.png")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(cli.SignalError{Sig: syscall.SIGTERM})
	var out, errOut bytes.Buffer
	err := executeTo(ctx, &out, &errOut, tiny("get", "--json", jsonPath, "--plot", plotPath)...)
	require.Error(t, err)
	assert.Equal(t, 143, exitStatus(err))
	assert.Equal(t, "interrupted by signal terminated during the load", err.Error())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3, out.String())
	assert.Equal(t, "workload", strings.Fields(lines[0])[0])
	assert.Equal(t, "interrupted (signal terminated) during the load, before it measured anything", lines[2])
	assert.Contains(t, errOut.String(), "load: interrupted after 0 of 2000 keys\n")
	assert.Contains(t, errOut.String(), "no plot written")

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var rep bench.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.True(t, rep.Interrupted)
	assert.Empty(t, rep.Results)
	_, err = os.Stat(plotPath)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestRun_SlowDisk: a short get run on the simulated slow disk, with a
// small block cache, finishes and says, above its table and in its JSON,
// that its disk latency is simulated.
func TestRun_SlowDisk(t *testing.T) {
	rep, out := runTiny(t, tiny("get", "--schedulers", "direct,mlfq", "--disk-latency", "100us",
		"--cache-size", "1048576", "--row-cache", "0", "-q")...)
	assert.Equal(t, 100.0, rep.SimulatedDiskLatencyUs)
	assert.Equal(t, int64(1<<20), rep.CacheSizeBytes)
	require.Len(t, rep.Results, 2)
	for _, r := range rep.Results {
		assert.Positive(t, r.Ops, r.Scheduler)
		assert.Zero(t, r.Errors, "%s\n%s", r.Scheduler, out)
	}
	assert.Regexp(t, `^store: simulated disk latency 100µs on every table read \(a nanosleep in ReadAt; `+
		`the page cache answers the read: not a real disk\), block cache 1 MiB\n`+
		`workload +scheduler +class +ops/s `, out)
}

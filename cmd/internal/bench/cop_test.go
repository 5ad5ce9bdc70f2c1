package bench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// TestRun_Cop runs the cop workload briefly on the default schedulers:
// its baseline cop-scan runs too, every class of both does some work
// without errors, the JSON has them in order, and a comparison line per
// scheduler follows the table. (The figures are for a real run.)
func TestRun_Cop(t *testing.T) {
	rep, out := runTiny(t, lookup(t, "cop"), "--duration", "500ms", "--warmup", "0s")
	assert.Equal(t, "cop-scan,cop", rep.Workload)
	var want, got [][3]string
	for _, w := range []struct {
		name    string
		classes []string
	}{{"cop-scan", []string{"get", "scan"}}, {"cop", []string{"get", "cop"}}} {
		for _, s := range []string{"mlfq", "fifo", "direct"} {
			for _, c := range w.classes {
				want = append(want, [3]string{w.name, s, c})
			}
		}
	}
	for _, r := range rep.Results {
		got = append(got, [3]string{r.Workload, r.Scheduler, r.Class})
		assert.Positive(t, r.Ops, "%s %s %s did nothing", r.Workload, r.Scheduler, r.Class)
		assert.Zero(t, r.Errors, "%s %s %s\n%s", r.Workload, r.Scheduler, r.Class, out)
	}
	assert.Equal(t, want, got)
	for _, s := range []string{"mlfq", "fifo", "direct"} {
		assert.Regexp(t, `(?m)^cop +`+s+` +cop +\d+ `, out)
		assert.Regexp(t, `(?m)^cop `+s+`: get p99 \S+ beside cop, \S+ beside scan \(cop-scan\) = [0-9.]+×$`, out)
	}
}

// TestRun_CopScan runs cop-scan on its own: its Gets beside scans of
// rows, with no comparison line (it has no baseline).
func TestRun_CopScan(t *testing.T) {
	rep, out := runTiny(t, lookup(t, "cop-scan"), "--schedulers", "mlfq", "--duration", "300ms", "--warmup", "0s")
	assert.Equal(t, "cop-scan", rep.Workload)
	var got [][3]string
	for _, r := range rep.Results {
		got = append(got, [3]string{r.Workload, r.Scheduler, r.Class})
		assert.Positive(t, r.Ops, "%s %s %s did nothing", r.Workload, r.Scheduler, r.Class)
		assert.Zero(t, r.Errors, "%s %s %s\n%s", r.Workload, r.Scheduler, r.Class, out)
	}
	assert.Equal(t, [][3]string{{"cop-scan", "mlfq", "get"}, {"cop-scan", "mlfq", "scan"}}, got)
	assert.NotContains(t, out, "beside scan (cop-scan)")
}

func TestWorkloads_Rows(t *testing.T) {
	for _, w := range Workloads() {
		want := w.Name() == "cop" || w.Name() == "cop-scan"
		assert.Equal(t, want, w.Rows(), "%s reads rows", w.Name())
	}
}

func TestCheckAggregate(t *testing.T) {
	ok := func() *coproc.Response {
		return &coproc.Response{
			Rows: []map[string]any{
				{"region": "r3", "count": int64(2), "sum": int64(12_000)},
				{"region": "r15", "count": int64(1), "sum": int64(9_999)},
			},
			Stats: coproc.Stats{RowsScanned: 100},
		}
	}
	require.NoError(t, checkAggregate(ok(), 7, 100))
	require.NoError(t, checkAggregate(&coproc.Response{Stats: coproc.Stats{RowsScanned: 3}}, 7, 3),
		"a few rows may all fail the filter")
	for _, tc := range []struct {
		name  string
		edit  func(r *coproc.Response)
		error string
	}{
		{"rows scanned", func(r *coproc.Response) { r.Stats.RowsScanned = 99 }, "scanned 99 rows"},
		{"nothing counted", func(r *coproc.Response) { r.Rows = nil }, "counted 0 rows"},
		{"more than scanned", func(r *coproc.Response) { r.Rows[0]["count"], r.Rows[0]["sum"] = int64(100), int64(500_000) }, "counted 101 rows"},
		{"unknown region", func(r *coproc.Response) { r.Rows[0]["region"] = "r16" }, "region r16: unknown or repeated"},
		{"repeated region", func(r *coproc.Response) { r.Rows[1]["region"] = "r3" }, "region r3: unknown or repeated"},
		{"no count", func(r *coproc.Response) { delete(r.Rows[0], "count") }, "count <nil>"},
		{"zero count", func(r *coproc.Response) { r.Rows[0]["count"] = int64(0) }, "count 0"},
		{"sum below the filter", func(r *coproc.Response) { r.Rows[0]["sum"] = int64(9_999) }, "sum 9999"},
		{"sum too big", func(r *coproc.Response) { r.Rows[1]["sum"] = int64(10_000) }, "sum 10000"},
		{"sum a float", func(r *coproc.Response) { r.Rows[1]["sum"] = 9_999.0 }, "sum 9999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.edit(r)
			err := checkAggregate(r, 7, 100)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "aggregate of 100 keys from user000000000007: ")
			assert.Contains(t, err.Error(), tc.error)
		})
	}
}

func TestWriteComparisons(t *testing.T) {
	rep := &Report{Workload: "cop-scan,cop", Results: []Result{
		{Workload: "cop-scan", Scheduler: "mlfq", Class: "get", P99us: 1000},
		{Workload: "cop-scan", Scheduler: "mlfq", Class: "scan", P99us: 50_000},
		{Workload: "cop", Scheduler: "mlfq", Class: "get", P99us: 1500},
		{Workload: "cop", Scheduler: "mlfq", Class: "cop", P99us: 20_000},
	}}
	var b strings.Builder
	require.NoError(t, copWorkload().Summarize(&b, rep))
	assert.Equal(t, "\ncop mlfq: get p99 1.50ms beside cop, 1.00ms beside scan (cop-scan) = 1.50×\n", b.String())

	b.Reset()
	rep.Results = rep.Results[2:]
	require.NoError(t, copWorkload().Summarize(&b, rep))
	assert.Empty(t, b.String(), "no baseline's results (an interrupted run), no comparison")
}

package main

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
	rep, out := runTiny(t, "--workload", "cop", "--duration", "300ms", "--warmup", "0s", "-q")
	assert.Equal(t, "cop-scan,cop", rep.Workload)
	var want, got [][3]string
	for _, w := range []string{"cop-scan", "cop"} {
		wl, _ := lookupWorkload(w)
		for _, s := range defaultSchedulers {
			for _, c := range wl.classes {
				want = append(want, [3]string{w, s, c.String()})
			}
		}
	}
	for _, r := range rep.Results {
		got = append(got, [3]string{r.Workload, r.Scheduler, r.Class})
		assert.Positive(t, r.Ops, "%s %s %s did nothing", r.Workload, r.Scheduler, r.Class)
		assert.Zero(t, r.Errors, "%s %s %s\n%s", r.Workload, r.Scheduler, r.Class, out)
	}
	assert.Equal(t, want, got)
	for _, s := range defaultSchedulers {
		assert.Regexp(t, `(?m)^cop +`+s+` +cop +\d+ `, out)
		assert.Regexp(t, `(?m)^cop `+s+`: get p99 \S+ beside cop, \S+ beside scan \(cop-scan\) = [0-9.]+×$`, out)
	}
}

// TestRun_CopWithOthers runs cop-scan and cop named apart, beside
// workloads that read plain values: the load writes rows for all of them,
// so the aggregates find sane answers, and get and noisy run on the rows.
func TestRun_CopWithOthers(t *testing.T) {
	rep, out := runTiny(t, "--workload", "get,cop,noisy,cop-scan", "--schedulers", "mlfq",
		"--duration", "300ms", "--warmup", "0s", "--no-quiet", "-q")
	assert.Equal(t, "get,cop,noisy,cop-scan", rep.Workload, "a baseline named is not added again")
	for _, r := range rep.Results {
		assert.Positive(t, r.Ops, "%s %s %s did nothing", r.Workload, r.Scheduler, r.Class)
		assert.Zero(t, r.Errors, "%s %s %s\n%s", r.Workload, r.Scheduler, r.Class, out)
	}
	assert.Regexp(t, `(?m)^cop mlfq: get p99 .* \(cop-scan\)`, out)
}

func TestConfig_CopBaselineAndRows(t *testing.T) {
	for _, tc := range []struct {
		workloads string
		want      []string
		rows      bool
	}{
		{"noisy", []string{"noisy"}, false},
		{"cop", []string{"cop-scan", "cop"}, true},
		{"noisy,cop", []string{"noisy", "cop-scan", "cop"}, true},
		{"cop,cop-scan", []string{"cop", "cop-scan"}, true},
		{"cop-scan", []string{"cop-scan"}, true},
	} {
		t.Run(tc.workloads, func(t *testing.T) {
			cfg, err := parse(t, "--workload", tc.workloads)
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg.workloads)
			assert.Equal(t, tc.rows, cfg.rows)
		})
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
	rep := &report{Workload: "cop-scan,cop", Results: []result{
		{Workload: "cop-scan", Scheduler: "mlfq", Class: "get", P99us: 1000},
		{Workload: "cop-scan", Scheduler: "mlfq", Class: "scan", P99us: 50_000},
		{Workload: "cop", Scheduler: "mlfq", Class: "get", P99us: 1500},
		{Workload: "cop", Scheduler: "mlfq", Class: "cop", P99us: 20_000},
	}}
	var b strings.Builder
	require.NoError(t, writeComparisons(&b, rep))
	assert.Equal(t, "\ncop mlfq: get p99 1.50ms beside cop, 1.00ms beside scan (cop-scan) = 1.50×\n", b.String())

	b.Reset()
	rep.Workload = "cop"
	require.NoError(t, writeComparisons(&b, rep))
	assert.Empty(t, b.String(), "no baseline in the run, no comparison")
}

package bench

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun_NoisyQuiet runs noisy briefly on mlfq and fifo: on each, its
// quiet phase's Gets (workload noisy-quiet, paced, only class get) come
// just before noisy's own rows, did some work without errors, and the
// lines under the table follow. (The figures are for a real run.)
func TestRun_NoisyQuiet(t *testing.T) {
	rep, out := runTiny(t, lookup(t, "noisy"), "--schedulers", "mlfq,fifo",
		"--duration", "100ms", "--warmup", "0s")
	assert.Equal(t, "noisy", rep.Workload, "the quiet phase is not a workload of its own")
	var got [][3]string
	for _, r := range rep.Results {
		got = append(got, [3]string{r.Workload, r.Scheduler, r.Class})
		assert.Positive(t, r.Ops, "%s %s %s did nothing", r.Workload, r.Scheduler, r.Class)
		assert.Zero(t, r.Errors, "%s %s %s\n%s", r.Workload, r.Scheduler, r.Class, out)
		assert.Empty(t, r.Group)
		if r.Workload == "noisy-quiet" {
			require.NotNil(t, r.Pacing, "the quiet Gets are paced")
			assert.InDelta(t, 2/200e-6, r.Pacing.OfferedPerSec, 1e-6, "as many Gets offered as beside the scans")
		}
	}
	assert.Equal(t, [][3]string{
		{"noisy-quiet", "mlfq", "get"}, {"noisy", "mlfq", "get"}, {"noisy", "mlfq", "scan"},
		{"noisy-quiet", "fifo", "get"}, {"noisy", "fifo", "get"}, {"noisy", "fifo", "scan"},
	}, got)
	for _, s := range []string{"mlfq", "fifo"} {
		assert.Regexp(t, `(?m)^noisy-quiet +`+s+` +get e2e +\d+ +10000 `, out)
		assert.Regexp(t, `(?m)^noisy-quiet +`+s+` +get service `, out)
		assert.Regexp(t, `(?m)^noisy `+s+`: get e2e p99 \S+ quiet, \S+ beside 2 scanners = [0-9.]+× \(want ≤ 3×\): (ok|missed)$`, out)
		assert.Regexp(t, `(?m)^noisy `+s+`: achieved [0-9.]+% of the offered rate beside the scanners \(want ≥ 98%\): (ok|missed)$`, out)
	}
	assert.Regexp(t, `(?m)^noisy: fifo e2e p99 \S+ ÷ mlfq e2e p99 \S+ = [0-9.]+× \(want ≥ 10×\): (ok|missed)$`, out)
}

// TestRun_NoisyNoQuiet: --no-quiet skips the quiet phase, its rows and
// its line; the lines that need only the measured phase stay.
func TestRun_NoisyNoQuiet(t *testing.T) {
	rep, out := runTiny(t, lookup(t, "noisy"), "--schedulers", "mlfq",
		"--duration", "100ms", "--warmup", "0s", "--no-quiet")
	var got [][3]string
	for _, r := range rep.Results {
		got = append(got, [3]string{r.Workload, r.Scheduler, r.Class})
	}
	assert.Equal(t, [][3]string{{"noisy", "mlfq", "get"}, {"noisy", "mlfq", "scan"}}, got)
	assert.NotContains(t, out, "noisy-quiet")
	assert.NotContains(t, out, " quiet, ")
	assert.Regexp(t, `(?m)^noisy mlfq: achieved [0-9.]+% of the offered rate`, out)
	assert.NotContains(t, out, "÷", "no fifo, no comparison with it")
}

func TestP99Ratio(t *testing.T) {
	for _, tc := range []struct {
		num, den float64
		want     float64
		ok       bool
		shown    string
	}{
		{450, 150, 3, true, "3.00×"},
		{2.61e6, 15_240, 2.61e6 / 15_240, true, "171.26×"},
		{100, 400, 0.25, true, "0.25×"},
		{0, 150, 0, false, "-"},
		{450, 0, 0, false, "-"},
	} {
		got, ok := p99Ratio(tc.num, tc.den)
		assert.Equal(t, tc.ok, ok, "%v ÷ %v", tc.num, tc.den)
		assert.InDelta(t, tc.want, got, 1e-9, "%v ÷ %v", tc.num, tc.den)
		assert.Equal(t, tc.shown, formatRatio(got, ok), "%v ÷ %v", tc.num, tc.den)
	}
}

// TestWriteNoisySummaries checks the lines under the table for a made-up
// report: each aim against its bound, a quiet phase missing on one
// scheduler, and a class that recorded nothing.
func TestWriteNoisySummaries(t *testing.T) {
	paced := func(achieved float64) *Pacing {
		return &Pacing{Arrival: "fixed", OfferedPerSec: 20_000, AchievedPct: achieved}
	}
	rep := &Report{
		Workload: "noisy",
		Results: []Result{
			{Workload: "noisy-quiet", Scheduler: "mlfq", Class: "get", P99us: 150, Pacing: paced(100)},
			{Workload: "noisy", Scheduler: "mlfq", Class: "get", P99us: 450, Pacing: paced(98)},
			{Workload: "noisy", Scheduler: "mlfq", Class: "scan", P99us: 200_000},
			{Workload: "noisy-quiet", Scheduler: "fifo", Class: "get", P99us: 100, Pacing: paced(100)},
			{Workload: "noisy", Scheduler: "fifo", Class: "get", P99us: 4_400, Pacing: paced(12.6)},
			{Workload: "noisy", Scheduler: "fifo", Class: "scan", P99us: 150_000},
			{Workload: "noisy-quiet", Scheduler: "direct", Class: "get", P99us: 0, Pacing: paced(0)},
			{Workload: "noisy", Scheduler: "direct", Class: "get", P99us: 300, Pacing: paced(99)},
			{Workload: "noisy", Scheduler: "priority", Class: "get", P99us: 300, Pacing: paced(99)},
			// Think arrival: its offered rate is an upper bound, so no
			// achieved verdict.
			{Workload: "noisy", Scheduler: "fifo-think", Class: "get", P99us: 300,
				Pacing: &Pacing{Arrival: "think", OfferedPerSec: 20_000, AchievedPct: 95}},
		},
	}
	var b strings.Builder
	require.NoError(t, writeNoisySummaries(&b, "noisy", 8, rep))
	assert.Equal(t, `
noisy mlfq: get e2e p99 150µs quiet, 450µs beside 8 scanners = 3.00× (want ≤ 3×): ok
noisy mlfq: achieved 98.0% of the offered rate beside the scanners (want ≥ 98%): ok
noisy fifo: get e2e p99 100µs quiet, 4.40ms beside 8 scanners = 44.00× (want ≤ 3×): missed
noisy fifo: achieved 12.6% of the offered rate beside the scanners (want ≥ 98%): missed
noisy direct: get e2e p99 - quiet, 300µs beside 8 scanners = - (want ≤ 3×): missed
noisy direct: achieved 99.0% of the offered rate beside the scanners (want ≥ 98%): ok
noisy priority: achieved 99.0% of the offered rate beside the scanners (want ≥ 98%): ok
noisy: fifo e2e p99 4.40ms ÷ mlfq e2e p99 450µs = 9.78× (want ≥ 10×): missed
`, b.String())

	b.Reset()
	require.NoError(t, writeNoisySummaries(&b, "noisy", 8, &Report{Workload: "noisy"}))
	assert.Empty(t, b.String(), "no summary without noisy's results (an interrupted run)")
}

// TestRun_NoisyMaxQueueWait: with --max-queue-wait the Gets carry the
// limit; refusals get a class of their own (their service time) and a line
// under the table says how the estimate served the admitted ones.
func TestRun_NoisyMaxQueueWait(t *testing.T) {
	rep, out := runTiny(t, lookup(t, "noisy"), "--schedulers", "mlfq",
		"--duration", "200ms", "--warmup", "0s", "--no-quiet", "--max-queue-wait", "1ns")
	var classes []string
	for _, r := range rep.Results {
		classes = append(classes, r.Class)
	}
	assert.Equal(t, []string{"get", "scan", "get refused"}, classes)
	assert.Regexp(t, `(?m)^noisy mlfq: --max-queue-wait 1ns: \d+ Gets refused \(service p99 \S+\); of \d+ admitted, [0-9.]+% started within the limit \(want ≥ 90%\): (ok|missed), [0-9.]+% within their estimate$`, out)
}

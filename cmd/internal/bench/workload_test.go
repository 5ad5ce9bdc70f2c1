package bench

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flagsOf registers w's flags on a fresh set, parses args and returns
// the set.
func flagsOf(t *testing.T, w Workload, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet(w.Name(), pflag.ContinueOnError)
	w.Flags(fs)
	require.NoError(t, fs.Parse(args))
	return fs
}

// TestWorkloads_OwnFlags pins each workload's own flags: a flag is on the
// subcommands of the workloads that use it, and only there.
func TestWorkloads_OwnFlags(t *testing.T) {
	want := map[string][]string{
		"get":          {"clients"},
		"scan":         {"clients", "scan-len"},
		"multiget":     {"clients", "multiget-keys"},
		"noisy":        {"arrival", "clients", "long-scan-len", "max-queue-wait", "no-quiet", "scanners", "think"},
		"cop-scan":     {"arrival", "clients", "long-scan-len", "max-queue-wait", "scanners", "think"},
		"cop":          {"arrival", "clients", "long-scan-len", "max-queue-wait", "scanners", "think"},
		"groups":       {"clients", "group-scanners", "oltp-rate", "scan-len"},
		"groups-steps": {"group-scanners"},
		"soak":         {"clients", "think"},
		"txn":          {"accounts", "clients", "hot", "hot-accounts"},
		"runaway": {"action", "arrival", "clients", "exec", "long-scan-len", "max-queue-wait", "retry-after", "rows", "scanners",
			"short-scan-len", "short-scanners", "short-think", "think", "watch"},
		"ttl": {"clients", "rate", "think", "ttl"},
	}
	var names []string
	for _, w := range Workloads() {
		names = append(names, w.Name())
		var got []string
		flagsOf(t, w).VisitAll(func(f *pflag.Flag) { got = append(got, f.Name) })
		assert.Equal(t, want[w.Name()], got, w.Name())
		assert.NotEmpty(t, w.Short(), w.Name())
		assert.Contains(t, w.Long(), w.Name(), "%s's help names it", w.Name())
	}
	assert.Equal(t, []string{"get", "scan", "multiget", "noisy", "cop-scan", "cop", "groups", "groups-steps", "soak", "txn", "runaway", "ttl"}, names)
}

// TestWorkloads_FlagDefaults: the defaults are a plain run's, as they
// were when every flag was kvbench's, and they validate.
func TestWorkloads_FlagDefaults(t *testing.T) {
	byName := map[string]Workload{}
	for _, w := range Workloads() {
		flagsOf(t, w)
		assert.NoError(t, w.Validate(), w.Name())
		byName[w.Name()] = w
	}
	noisy := byName["noisy"].(*noisyLoad)
	assert.Equal(t, besideFlags{clients: clientsFlag{4}, scanners: 8, longScanLen: 100_000, think: 200 * time.Microsecond, arrival: "fixed"}, noisy.beside)
	assert.False(t, noisy.noQuiet)
	assert.Equal(t, noisy.beside, byName["cop"].(*copLoad).beside)
	assert.Equal(t, noisy.beside, *byName["cop-scan"].(*copScanLoad).beside)
	g := byName["groups"].(*groupsLoad)
	assert.Equal(t, [4]float64{4, 2_000, 1_000, 64}, [4]float64{float64(g.clients.n), g.oltpRate, float64(g.scanLen.n), float64(g.scanners)})
	assert.Equal(t, 64, byName["groups-steps"].(*groupsLoad).scanners)
	assert.Equal(t, 100, byName["multiget"].(*multiGetLoad).keys)
	assert.Equal(t, 1_000, byName["scan"].(*scanLoad).scanLen.n)
	assert.Equal(t, 200*time.Microsecond, byName["soak"].(*soakLoad).think)
}

// TestCop_BaselineTakesCopsFlags: cop's baseline phases run with cop's
// --scanners and --long-scan-len, so that the two compare.
func TestCop_BaselineTakesCopsFlags(t *testing.T) {
	w := copWorkload().(*copLoad)
	flagsOf(t, w, "--scanners", "3", "--long-scan-len", "77")
	assert.Equal(t, 3, w.baseline.beside.scanners)
	assert.Equal(t, 77, w.baseline.beside.longScanLen)
	var got [][3]string
	for _, p := range w.Phases() {
		got = append(got, [3]string{p.Section, p.Label, map[bool]string{true: "warm-up", false: "measured"}[p.Warmup]})
	}
	assert.Equal(t, [][3]string{
		{"cop-scan", "cop-scan", "warm-up"}, {"cop-scan", "cop-scan", "measured"},
		{"cop", "cop", "warm-up"}, {"cop", "cop", "measured"},
	}, got)
}

// TestNoisy_Phases: a warm-up, the quiet phase (its Gets alone, reported
// as noisy-quiet) and the measured phase; --no-quiet drops the quiet one.
func TestNoisy_Phases(t *testing.T) {
	w := noisyWorkload().(*noisyLoad)
	flagsOf(t, w)
	labels := func() []string {
		var out []string
		for _, p := range w.Phases() {
			l := p.Label
			if p.Warmup {
				l += " warm-up"
			}
			out = append(out, l)
		}
		return out
	}
	assert.Equal(t, []string{"noisy warm-up", "noisy quiet", "noisy"}, labels())
	assert.Equal(t, "noisy-quiet", w.Phases()[1].Workload)
	flagsOf(t, w, "--no-quiet")
	assert.Equal(t, []string{"noisy warm-up", "noisy"}, labels())
}

// TestCountRows_CutOffScanCounts: a scan the phase's end cuts off is no
// operation, but its rows count, so that scans longer than the phase
// (whole-store scans on a slow disk) still report the rows they read.
func TestCountRows_CutOffScanCounts(t *testing.T) {
	scanner := countRows(func(ctx context.Context, rows *int64) (class, error) {
		*rows += 7
		<-ctx.Done() // a scan longer than the phase
		return classScan, ctx.Err()
	})
	m := runPhase(context.Background(), nil, []client{scanner}, 20*time.Millisecond)
	s := m.merged().summarize(classScan, m.elapsed)
	assert.Zero(t, s.ops, "the cut-off scan is no operation")
	assert.Zero(t, s.errors)
	assert.Equal(t, int64(7), s.rows)
	assert.Positive(t, s.rowsPerSec)
}

// TestRun_ScanRows: the scans of scan and noisy report their rows, every
// row each scan read.
func TestRun_ScanRows(t *testing.T) {
	rep, out := runTiny(t, lookup(t, "scan"), "--schedulers", "direct", "--warmup", "0s", "--duration", "100ms")
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	require.Positive(t, r.Ops)
	// Each scan counted read --scan-len 100 rows, and so may the scan of
	// each of the 2 clients that the phase's end cut off.
	assert.GreaterOrEqual(t, r.Rows, r.Ops*100)
	assert.LessOrEqual(t, r.Rows, (r.Ops+2)*100, "at most the 2 clients' cut-off scans beyond")
	assert.InEpsilon(t, float64(r.Rows)/0.1, r.RowsPerSec, 0.2, "rows over the phase")
	assert.Regexp(t, `(?m)^workload +scheduler +class +ops/s +rows/s +p50 `, out)

	rep, _ = runTiny(t, lookup(t, "noisy"), "--schedulers", "mlfq", "--warmup", "0s", "--duration", "100ms", "--no-quiet")
	require.Len(t, rep.Results, 2)
	assert.Zero(t, rep.Results[0].Rows, "the Gets read no rows")
	assert.Equal(t, "scan", rep.Results[1].Class)
	assert.Positive(t, rep.Results[1].RowsPerSec, "the scanners' rows/s")
}

// A phase whose client goes on after the phase's end — a store call that
// does not end with its context — reports how long it overran.
func TestRunPhase_Overrun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		late := func(ctx context.Context, _ *recorder) {
			<-ctx.Done()
			time.Sleep(300 * time.Millisecond)
		}
		m := runPhase(context.Background(), nil, []client{late}, time.Second)
		assert.Equal(t, 300*time.Millisecond, m.overrun)
		assert.Equal(t, time.Second, m.elapsed)
		m = runPhase(context.Background(), nil, []client{func(ctx context.Context, _ *recorder) { <-ctx.Done() }}, time.Second)
		assert.Zero(t, m.overrun, "a client that stops at the end")
	})
}

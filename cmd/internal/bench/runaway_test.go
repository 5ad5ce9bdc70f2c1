package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun_Runaway runs runaway briefly under a kill rule of 10 rows with a
// watch: its phases report in order, the whole scans fail only under the
// rule (killed, then refused by the watch), the well-behaved reads never,
// and the lines under the table give the p99s and what the rule caught.
// direct is left out: its reads have no steps to judge.
func TestRun_Runaway(t *testing.T) {
	rep, out := runTiny(t, lookup(t, "runaway"), "--schedulers", "mlfq,direct,priority",
		"--duration", "200ms", "--warmup", "0s", "--scanners", "2", "--exec", "0", "--rows", "10")
	var got [][3]string
	for _, r := range rep.Results {
		id := [3]string{r.Workload, r.Scheduler, r.Class}
		got = append(got, id)
		if r.Workload == "runaway" && r.Class == "full scan" {
			assert.Positive(t, r.Errors, "%v: killed", id)
			assert.Zero(t, r.Ops, "%v: no whole scan ends under the rule", id)
			continue
		}
		assert.Positive(t, r.Ops, "%v did nothing", id)
		assert.Zero(t, r.Errors, "%v\n%s", id, out)
	}
	var want [][3]string
	for _, s := range []string{"mlfq", "priority"} {
		want = append(want,
			[3]string{"runaway-quiet", s, "get"}, [3]string{"runaway-quiet", s, "scan"},
			[3]string{"runaway-norule", s, "get"}, [3]string{"runaway-norule", s, "scan"}, [3]string{"runaway-norule", s, "full scan"},
			[3]string{"runaway", s, "get"}, [3]string{"runaway", s, "scan"}, [3]string{"runaway", s, "full scan"})
	}
	assert.Equal(t, want, got)
	for _, s := range []string{"mlfq", "priority"} {
		assert.Regexp(t, `(?m)^runaway `+s+`: get e2e p99 \S+ alone, \S+ beside 2 whole scans \(\S+\), \S+ under kill past 10 rows, watch 1m0s = \S+ \(want ≤ 1.5×\): (ok|missed)$`, out)
		assert.Regexp(t, `(?m)^runaway `+s+`: the rule caught [1-9]\d* reads \(dryrun 0, cooldown 0, kill [1-9]\d*\), [1-9]\d* of them by its watch$`, out)
	}
}

// Bad rule flags are usage errors that name them.
func TestRunaway_Validate(t *testing.T) {
	w := lookup(t, "runaway").(*runawayLoad)
	flagsOf(t, w)
	require.NoError(t, w.Validate())
	w.action, w.exec, w.shortScanLen = "explode", -1, 0
	err := w.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--action, --exec, --rows, --watch")
	assert.Contains(t, err.Error(), "--short-scan-len")
}

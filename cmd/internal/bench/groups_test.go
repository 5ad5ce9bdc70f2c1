package bench

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// groupResultIDs are the (workload, scheduler, class, group) of the
// results a groups workload reports, in order: its alone phase, then every
// group.
func groupResultIDs(w *groupsLoad) [][4]string {
	var ids [][4]string
	if a := w.spec.alone; a != "" {
		t := w.spec.tenant(a)
		ids = append(ids, [4]string{w.name, groupsScheduler, t.class.String(), a + aloneSuffix})
	}
	for _, t := range w.spec.tenants {
		ids = append(ids, [4]string{w.name, groupsScheduler, t.class.String(), t.cfg.Name})
	}
	return ids
}

// TestRun_Groups runs each groups workload briefly with --schedulers
// naming only mlfq: it still runs, on priority, with a result per group
// carrying its group and its RU/s, and the summary under the table names
// every group. (The aims' figures are for a real run; a unit test on a
// shared machine checks only that they are there.)
func TestRun_Groups(t *testing.T) {
	for _, tc := range []struct {
		name   string
		groups []string
		lines  []string
	}{
		{"groups", []string{"oltp", "batch-a", "batch-b", "capped"},
			[]string{"\ngroups: RU consumed per second", "  batch-a : batch-b = ", "  capped: ", "  oltp get p99: "}},
		{"groups-steps", []string{"scan-1024", "scan-100"},
			[]string{"\ngroups-steps: RU consumed per second", "  scan-1024 : scan-100 = "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := lookup(t, tc.name)
			rep, out := runTiny(t, w, "--duration", "300ms", "--warmup", "0", "--schedulers", "mlfq")
			var got [][4]string
			for _, r := range rep.Results {
				got = append(got, [4]string{r.Workload, r.Scheduler, r.Class, r.Group})
			}
			require.Equal(t, groupResultIDs(w.(*groupsLoad)), got, out)
			assert.Equal(t, tc.name, rep.Workload)

			for _, r := range rep.Results {
				id := [4]string{r.Workload, r.Scheduler, r.Class, r.Group}
				assert.Positive(t, r.Ops, "%v did nothing", id)
				assert.Zero(t, r.Errors, "%v\n%s", id, out)
				if id[2] == "get" {
					// oltp's Gets are on a fixed schedule at --oltp-rate.
					require.NotNil(t, r.Pacing, "%v", id)
					assert.Equal(t, "fixed", r.Pacing.Arrival, "%v", id)
					assert.InDelta(t, 2_000.0, r.Pacing.OfferedPerSec, 1e-6, "%v", id)
					assert.Positive(t, r.Pacing.ServiceP99us, "%v", id)
				} else {
					assert.Nil(t, r.Pacing, "%v is not paced", id)
				}
				// Every group consumes RU: the scanning ones saturate the
				// pool, oltp's Gets are charged a request each.
				assert.Positive(t, r.RUPerSec, "%v", id)
			}
			for _, g := range tc.groups {
				assert.Regexp(t, `(?m)^  `+g+` +(high|medium), `, out, "the summary has a row for %s", g)
			}
			for _, line := range tc.lines {
				assert.Contains(t, out, line)
			}
		})
	}
}

// TestRun_GroupsNeedResourceGroups: on a store without resource groups
// the groups workload fails at once, saying why; nothing is measured.
func TestRun_GroupsNeedResourceGroups(t *testing.T) {
	w := lookup(t, "groups")
	cfg := parseRun(t, w)
	cfg.Quiet = true
	var out strings.Builder
	err := Run(t.Context(), cfg, w, &testStores{dir: t.TempDir(), wrap: hideDB}, &out, io.Discard)
	require.Error(t, err)
	assert.Equal(t, "priority groups: groups needs a store with resource groups (a *kv.DB opened with resource control); this one has none", err.Error())
	assert.Empty(t, out.String())
}

func TestWriteGroupSummaries(t *testing.T) {
	rep := &Report{
		Workload: "groups",
		Results: []Result{
			{Workload: "groups", Scheduler: "priority", Class: "get", Group: "oltp-alone", P99us: 400, RUPerSec: 250},
			{Workload: "groups", Scheduler: "priority", Class: "get", Group: "oltp", P99us: 1_000, RUPerSec: 300},
			{Workload: "groups", Scheduler: "priority", Class: "scan", Group: "batch-a", RUPerSec: 6_300},
			{Workload: "groups", Scheduler: "priority", Class: "scan", Group: "batch-b", RUPerSec: 2_000},
			{Workload: "groups", Scheduler: "priority", Class: "scan", Group: "capped", RUPerSec: 210},
		},
	}
	steps := &Report{
		Workload: "groups-steps",
		Results: []Result{
			{Workload: "groups-steps", Scheduler: "priority", Class: "scan", Group: "scan-1024", RUPerSec: 3_000},
			// scan-100 missing: its RU count as 0
		},
	}
	var buf bytes.Buffer
	require.NoError(t, groupsWorkload().Summarize(&buf, rep))
	require.NoError(t, groupsStepsWorkload().Summarize(&buf, steps))
	assert.Equal(t, `
groups: RU consumed per second of the measured phase, by group
  group    config                        RU/s   share
  oltp     high, 500 RU/s, burstable      300    3.4%
  batch-a  medium, 3000 RU/s, burstable  6300   71.5%
  batch-b  medium, 1000 RU/s, burstable  2000   22.7%
  capped   medium, 200 RU/s, limited      210    2.4%
  total                                  8810  100.0%
  batch-a : batch-b = 3.15 : 1, want 3 : 1 ± 10%: ok
  capped: 210 RU/s = 1.05× its limit of 200 RU/s, want 1 ± 10%: ok
  oltp get p99: 400µs alone, 1.00ms beside the others = 2.50×, want ≤ 2×: missed

groups-steps: RU consumed per second of the measured phase, by group
  group      config                        RU/s   share
  scan-1024  medium, 1000 RU/s, burstable  3000  100.0%
  scan-100   medium, 1000 RU/s, burstable     0    0.0%
  total                                    3000  100.0%
  scan-1024 : scan-100 = +Inf : 1, want 1 : 1 ± 10%: missed
`, buf.String())

	buf.Reset()
	require.NoError(t, groupsWorkload().Summarize(&buf, steps))
	assert.Empty(t, buf.String(), "no summary without its results (an interrupted run)")
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		got, want float64
		ok        bool
	}{
		{3, 3, true}, {2.7, 3, true}, {3.3, 3, true}, {2.69, 3, false}, {3.31, 3, false},
		{0, 3, false}, {1, 0, false},
	} {
		assert.Equal(t, tc.ok, within(tc.got, tc.want), "%v against %v", tc.got, tc.want)
	}
}

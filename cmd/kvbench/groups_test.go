package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// groupResultIDs are the (workload, scheduler, class, group) of the
// results a groups workload reports, in order: its alone phase, then every
// group.
func groupResultIDs(w *workload) [][4]string {
	var ids [][4]string
	if a := w.groups.alone; a != "" {
		t := w.groups.tenant(a)
		ids = append(ids, [4]string{w.name, groupsScheduler, t.class.String(), a + aloneSuffix})
	}
	for _, t := range w.groups.tenants {
		ids = append(ids, [4]string{w.name, groupsScheduler, t.class.String(), t.cfg.Name})
	}
	return ids
}

// TestRun_Groups runs both groups workloads briefly beside a plain one
// with --schedulers naming only mlfq: the groups workloads still run, on
// priority, with a result per group carrying its group and its RU/s, and
// the summary under the table names every group. (The aims' figures are
// for a real run; a unit test on a shared machine checks only that they
// are there.)
func TestRun_Groups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	out, errOut, err := execute(t, append(slices.Clone(tinyArgs),
		"--duration", "300ms", "--warmup", "0", "--group-scanners", "2",
		"--workload", "get,groups,groups-steps", "--schedulers", "mlfq", "--json", path, "-q")...)
	require.NoError(t, err, errOut)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))

	want := [][4]string{{"get", "mlfq", "get", ""}}
	for _, name := range []string{"groups", "groups-steps"} {
		w, _ := lookupWorkload(name)
		want = append(want, groupResultIDs(w)...)
	}
	var got [][4]string
	for _, r := range doc.Results {
		got = append(got, [4]string{r["workload"].(string), r["scheduler"].(string), r["class"].(string), r["group"].(string)})
	}
	require.Equal(t, want, got, out)

	for _, r := range doc.Results {
		id := [4]string{r["workload"].(string), r["scheduler"].(string), r["class"].(string), r["group"].(string)}
		assert.Positive(t, r["ops"], "%v did nothing", id)
		assert.Equal(t, 0.0, r["errors"], "%v\n%s", id, out)
		if id[3] == "" {
			assert.NotContains(t, r, "ru_per_sec", "a workload without groups has no RU")
			continue
		}
		if id[2] == "get" {
			// oltp's Gets are on a fixed schedule at --oltp-rate.
			assert.Equal(t, "fixed", r["arrival"], "%v", id)
			assert.InDelta(t, 2_000.0, r["offered_per_sec"], 1e-6, "%v", id)
			assert.Positive(t, r["service_p99_us"], "%v", id)
		} else {
			assert.NotContains(t, r, "arrival", "%v is not paced", id)
		}
		// Every group consumes RU: the scanning ones saturate the pool,
		// oltp's Gets are charged a request each.
		ru, ok := r["ru_per_sec"].(float64)
		if assert.True(t, ok, "%v has ru_per_sec", id) {
			assert.Positive(t, ru, "%v", id)
		}
	}

	// The summary under the table names every group and each aim.
	_, summary, ok := strings.Cut(out, "\ngroups: RU consumed per second")
	require.True(t, ok, out)
	for _, g := range []string{"oltp", "batch-a", "batch-b", "capped", "scan-1024", "scan-100"} {
		assert.Regexp(t, `(?m)^  `+g+` +(high|medium), `, summary, "the summary has a row for %s", g)
	}
	for _, line := range []string{"  batch-a : batch-b = ", "  capped: ", "  oltp get p99: ", "  scan-1024 : scan-100 = ",
		"\ngroups-steps: RU consumed per second"} {
		assert.Contains(t, summary, line)
	}
}

func TestWriteGroupSummaries(t *testing.T) {
	rep := &report{
		Workload: "get,groups,groups-steps",
		Results: []result{
			{Workload: "get", Scheduler: "mlfq", Class: "get", Ops: 10, P99us: 50},
			{Workload: "groups", Scheduler: "priority", Class: "get", Group: "oltp-alone", P99us: 400, RUPerSec: 250},
			{Workload: "groups", Scheduler: "priority", Class: "get", Group: "oltp", P99us: 1_000, RUPerSec: 300},
			{Workload: "groups", Scheduler: "priority", Class: "scan", Group: "batch-a", RUPerSec: 6_300},
			{Workload: "groups", Scheduler: "priority", Class: "scan", Group: "batch-b", RUPerSec: 2_000},
			{Workload: "groups", Scheduler: "priority", Class: "scan", Group: "capped", RUPerSec: 210},
			{Workload: "groups-steps", Scheduler: "priority", Class: "scan", Group: "scan-1024", RUPerSec: 3_000},
			// scan-100 missing: its RU count as 0
		},
	}
	var buf bytes.Buffer
	require.NoError(t, writeGroupSummaries(&buf, rep))
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
	require.NoError(t, writeGroupSummaries(&buf, &report{Workload: "noisy"}))
	assert.Empty(t, buf.String(), "no summary without groups")
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

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// group finds a group in a report by name.
func group(t *testing.T, rep groupsReport, name string) (groupRow, bool) {
	t.Helper()
	for _, g := range rep.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return groupRow{}, false
}

func TestGroups(t *testing.T) {
	db, addr := liveStore(t, kv.Options{ResourceControl: true, Workers: 2})
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "batch", RUPerSec: 3000, Priority: resource.PriorityLow}))
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "oltp", RUPerSec: 1000, Burstable: true, Priority: resource.PriorityHigh}))
	load(t, db, "batch")
	reads(t, db, "oltp", 50)

	rep := decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	assert.True(t, rep.ResourceControl)
	var names []string
	for _, g := range rep.Groups {
		names = append(names, g.Name)
	}
	assert.Equal(t, []string{"batch", "default", "oltp"}, names, "by name")

	batch, _ := group(t, rep, "batch")
	assert.Equal(t, "low", batch.Priority)
	assert.InDelta(t, 3000, batch.RUPerSec, 0)
	assert.False(t, batch.Burstable)
	require.NotNil(t, batch.Share)
	assert.InDelta(t, 0.75, *batch.Share, 1e-9, "3000 of the limited groups' 4000 RU/s")

	oltp, _ := group(t, rep, "oltp")
	assert.Equal(t, "high", oltp.Priority)
	assert.True(t, oltp.Burstable)
	require.NotNil(t, oltp.Share)
	assert.InDelta(t, 0.25, *oltp.Share, 1e-9)
	assert.Positive(t, oltp.RU, "oltp's reads were charged to it")

	def, _ := group(t, rep, "default")
	assert.Nil(t, def.Share, "default is unlimited: no share of the limited groups'")
	assert.Zero(t, def.RUPerSec)

	out := kvctl(t, "groups", "--addr", addr).ok(t)
	assert.Contains(t, out, "resource control: on")
	for _, s := range []string{"NAME", "PRIORITY", "RU/S", "SHARE", "BURSTABLE", "RU LAST S", "RU TOTAL", "QUEUED", "RUNNING", "HELD", "THROTTLED", "75.0%", "25.0%", "unlimited"} {
		assert.Contains(t, out, s)
	}
}

func TestGroups_ResourceControlOff(t *testing.T) {
	_, addr := liveStore(t, kv.Options{})
	rep := decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	assert.False(t, rep.ResourceControl)
	_, ok := group(t, rep, "default")
	assert.True(t, ok, "the groups are listed all the same")
	assert.Contains(t, kvctl(t, "groups", "--addr", addr).ok(t), "resource control: off")

	// Setting a group works, with a note that it schedules nothing yet.
	r := kvctl(t, "groups", "set", "batch", "--ru", "10", "--addr", addr)
	assert.Equal(t, "group \"batch\": 10.0 RU/s, burstable no, priority medium\n", r.ok(t))
	assert.Contains(t, r.stderr, "resource control is off on this store")
}

func TestGroupsSetDelete(t *testing.T) {
	db, addr := liveStore(t, kv.Options{ResourceControl: true})
	load(t, db, "batch")

	got := decode[resource.GroupConfig](t, kvctl(t, "groups", "set", "batch", "--ru", "2000", "--priority", "low", "--addr", addr, "--json").ok(t))
	assert.Equal(t, resource.GroupConfig{Name: "batch", RUPerSec: 2000, Priority: resource.PriorityLow}, got)
	cfg, ok := db.ResourceGroups().Get("batch")
	require.True(t, ok)
	assert.Equal(t, got, cfg, "the store's config is what kvctl printed")
	rep := decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	g, ok := group(t, rep, "batch")
	require.True(t, ok)
	assert.InDelta(t, 2000, g.RUPerSec, 0)
	assert.Equal(t, "low", g.Priority)

	// set replaces the whole config: the priority not given is medium again.
	r := kvctl(t, "groups", "set", "batch", "--ru", "0", "--burstable", "--addr", addr)
	assert.Equal(t, "group \"batch\": unlimited RU/s, burstable yes, priority medium\n", r.ok(t))
	assert.Empty(t, r.stderr, "resource control is on: no note")
	cfg, _ = db.ResourceGroups().Get("batch")
	assert.Equal(t, resource.GroupConfig{Name: "batch", Burstable: true, Priority: resource.PriorityMedium}, cfg)

	// The priority by number, as the endpoint takes it.
	got = decode[resource.GroupConfig](t, kvctl(t, "groups", "set", "batch", "--ru", "5", "--priority", "16", "--addr", addr, "--json").ok(t))
	assert.Equal(t, resource.PriorityHigh, got.Priority)

	del := decode[map[string]string](t, kvctl(t, "groups", "delete", "batch", "--addr", addr, "--json").ok(t))
	assert.Equal(t, map[string]string{"deleted": "batch"}, del)
	rep = decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	_, ok = group(t, rep, "batch")
	assert.False(t, ok, "deleted")
	_, ok = db.ResourceGroups().Get("batch")
	assert.False(t, ok)

	// A name that needs escaping in a URL.
	kvctl(t, "groups", "set", "a b/c?d", "--ru", "1", "--addr", addr).ok(t)
	_, ok = db.ResourceGroups().Get("a b/c?d")
	assert.True(t, ok)
	assert.Equal(t, "deleted group \"a b/c?d\"\n", kvctl(t, "groups", "delete", "a b/c?d", "--addr", addr).ok(t))

	r = kvctl(t, "groups", "delete", "", "--addr", addr)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "empty group name")
}

func TestGroupsSet_Runaway(t *testing.T) {
	db, addr := liveStore(t, kv.Options{ResourceControl: true})
	want := &resource.RunawayRule{ExecElapsed: 10 * time.Millisecond, RowsScanned: 5000, Action: resource.RunawayKill, Watch: time.Minute}

	r := kvctl(t, "groups", "set", "batch", "--ru", "2000", "--runaway-exec", "10ms", "--runaway-rows", "5000",
		"--runaway-action", "KILL", "--runaway-watch", "1m", "--addr", addr)
	assert.Equal(t, "group \"batch\": 2000.0 RU/s, burstable no, priority medium, runaway: kill past 10ms or 5000 rows, watch 1m0s\n", r.ok(t))
	assert.Equal(t, want, db.ResourceGroups().Resolve("batch").Runaway(), "the store's rule is the flags'")

	got := decode[resource.GroupConfig](t, kvctl(t, "groups", "set", "batch", "--ru", "2000", "--runaway-exec", "10ms", "--runaway-rows", "5000",
		"--runaway-action", "kill", "--runaway-watch", "1m", "--addr", addr, "--json").ok(t))
	assert.Equal(t, want, got.Runaway)

	// The list shows it, as JSON and in the table.
	rep := decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	g, ok := group(t, rep, "batch")
	require.True(t, ok)
	assert.Equal(t, want, g.Runaway)
	def, _ := group(t, rep, "default")
	assert.Nil(t, def.Runaway)
	out := kvctl(t, "groups", "--addr", addr).ok(t)
	assert.Contains(t, out, "RUNAWAY")
	assert.Contains(t, out, "kill past 10ms or 5000 rows, watch 1m0s")

	// One limit is enough; set without the flags removes the rule.
	kvctl(t, "groups", "set", "batch", "--ru", "1", "--runaway-rows", "7", "--runaway-action", "dryrun", "--addr", addr).ok(t)
	assert.Equal(t, &resource.RunawayRule{RowsScanned: 7, Action: resource.RunawayDryRun}, db.ResourceGroups().Resolve("batch").Runaway())
	kvctl(t, "groups", "set", "batch", "--ru", "1", "--addr", addr).ok(t)
	assert.Nil(t, db.ResourceGroups().Resolve("batch").Runaway(), "set replaces the whole config")
}

// Bad rules fail with a message that says why, and the group keeps its
// rule: kvctl refuses a missing or unknown action itself, the store the
// values.
func TestGroupsSet_BadRunaway(t *testing.T) {
	db, addr := liveStore(t, kv.Options{ResourceControl: true})
	kept := &resource.RunawayRule{RowsScanned: 100, Action: resource.RunawayCooldown}
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "batch", Runaway: kept}))
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"no action", []string{"--runaway-exec", "10ms"}, "--runaway-action is required"},
		{"unknown action", []string{"--runaway-rows", "5", "--runaway-action", "explode"}, `Action "explode" is not dryrun, cooldown or kill`},
		{"no limit", []string{"--runaway-action", "kill"}, "neither ExecElapsed nor RowsScanned"},
		{"negative exec", []string{"--runaway-exec", "-5ms", "--runaway-action", "kill"}, "ExecElapsed -5ms is negative"},
		{"negative rows", []string{"--runaway-rows", "-1", "--runaway-action", "kill"}, "RowsScanned -1 is negative"},
		{"absurd exec", []string{"--runaway-exec", "1000h", "--runaway-action", "kill"}, "ExecElapsed 1000h0m0s is neither 0"},
		{"tiny exec", []string{"--runaway-exec", "10ns", "--runaway-action", "kill"}, "ExecElapsed 10ns is neither 0"},
		{"absurd rows", []string{"--runaway-rows", "9223372036854775807", "--runaway-action", "kill"}, "RowsScanned 9223372036854775807 is more than"},
		{"absurd watch", []string{"--runaway-rows", "5", "--runaway-action", "kill", "--runaway-watch", "720h"}, "Watch 720h0m0s is neither 0"},
		{"rows not a number", []string{"--runaway-rows", "lots", "--runaway-action", "kill"}, "runaway-rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"groups", "set", "batch", "--ru", "1", "--addr", addr}, tc.flags...)
			r := kvctl(t, args...)
			assert.NotZero(t, r.code)
			assert.Contains(t, r.stderr, tc.want)
		})
	}
	got, _ := db.ResourceGroups().Get("batch")
	assert.Equal(t, kept, got.Runaway, "no bad rule may change the group's")
}

// Each group's runaway reads (GET /stats) show beside its rule, the live
// watches are counted, and a deleted group's reads stay shown.
func TestGroups_RunawayReads(t *testing.T) {
	db, addr := liveStore(t, kv.Options{ResourceControl: true, TimeSlice: 100 * time.Microsecond})
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "batch",
		Runaway: &resource.RunawayRule{RowsScanned: 10, Action: resource.RunawayKill, Watch: time.Hour}}))
	runaway(t, kv.WithResourceGroup(t.Context(), "batch"), db)

	rep := decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	batch, ok := group(t, rep, "batch")
	require.True(t, ok)
	assert.Equal(t, &resource.RunawayGroupStats{Group: "batch", Kill: 2, Watched: 1}, batch.RunawayReads)
	def, _ := group(t, rep, "default")
	assert.Equal(t, &resource.RunawayGroupStats{Group: "default"}, def.RunawayReads, "none, but counted")
	assert.Equal(t, 1, rep.Watches)
	assert.Empty(t, rep.RunawayUnlisted)

	out := kvctl(t, "groups", "--addr", addr).ok(t)
	assert.Contains(t, out, "RUNAWAY READS\n")
	assert.Regexp(t, `batch .* kill past 10 rows, watch 1h0m0s\s+kill 2 \(1 by watch\)\n`, out)
	assert.Regexp(t, `default .* -\s+0\n`, out, "no rule, no runaway reads")
	assert.Contains(t, out, "live runaway watches: 1 (kvctl groups watches)\n")

	kvctl(t, "groups", "delete", "batch", "--addr", addr).ok(t)
	rep = decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	assert.Equal(t, []resource.RunawayGroupStats{{Group: "batch", Kill: 2, Watched: 1}}, rep.RunawayUnlisted)
	assert.Contains(t, kvctl(t, "groups", "--addr", addr).ok(t), `runaway reads of "batch", no longer a group: kill 2 (1 by watch)`+"\n")
}

// Without resource control kv.Options.Runaway judges every read, and the
// group "default" has them; with the direct scheduler nothing is judged.
func TestGroups_RunawayReadsWithoutResourceControl(t *testing.T) {
	db, addr := liveStore(t, kv.Options{TimeSlice: 100 * time.Microsecond,
		Runaway: &resource.RunawayRule{RowsScanned: 10, Action: resource.RunawayKill, Watch: time.Hour}})
	runaway(t, t.Context(), db)
	rep := decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	def, ok := group(t, rep, "default")
	require.True(t, ok)
	assert.Equal(t, &resource.RunawayGroupStats{Group: "default", Kill: 2, Watched: 1}, def.RunawayReads)
	assert.Regexp(t, `default .*kill 2 \(1 by watch\)\n`, kvctl(t, "groups", "--addr", addr).ok(t))

	_, addr = liveStore(t, kv.Options{Scheduler: kv.SchedulerDirect})
	rep = decode[groupsReport](t, kvctl(t, "groups", "--addr", addr, "--json").ok(t))
	def, _ = group(t, rep, "default")
	assert.Nil(t, def.RunawayReads)
	assert.Zero(t, rep.Watches)
	assert.Regexp(t, `default .* -\s+-\n`, kvctl(t, "groups", "--addr", addr).ok(t))
}

func TestRunawayCounts(t *testing.T) {
	for want, g := range map[string]resource.RunawayGroupStats{
		"0":                               {},
		"dryrun 3":                        {DryRun: 3},
		"cooldown 1, kill 2 (2 by watch)": {Cooldown: 1, Kill: 2, Watched: 2},
		"dryrun 1, cooldown 1, kill 1":    {DryRun: 1, Cooldown: 1, Kill: 1},
	} {
		assert.Equal(t, want, runawayCounts(&g))
	}
}

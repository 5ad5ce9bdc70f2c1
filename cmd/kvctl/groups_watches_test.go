package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// scanFrom reads from start to the end and returns the scan's error.
func scanFrom(ctx context.Context, db *kv.DB, start []byte) error {
	it := db.Scan(ctx, start, nil, nil)
	for it.Next() {
	}
	err := it.Err()
	_ = it.Close()
	return err
}

// The watches a rule left: by the open start, by task id, and by a start
// key too long to keep whole.
func TestGroupsWatches(t *testing.T) {
	db, addr := liveStore(t, kv.Options{TimeSlice: 100 * time.Microsecond,
		Runaway: &resource.RunawayRule{RowsScanned: 10, Action: resource.RunawayKill, Watch: time.Hour}})
	assert.Equal(t, "no live runaway watches\n", kvctl(t, "groups", "watches", "--addr", addr).ok(t))

	ctx := t.Context()
	long := append(key(100), strings.Repeat("!", 300)...) // between k00100 and k00101
	require.ErrorIs(t, scanFrom(ctx, db, nil), kv.ErrRunaway)
	require.ErrorIs(t, scanFrom(kv.WithTaskID(ctx, 42), db, key(5)), kv.ErrRunaway)
	require.ErrorIs(t, scanFrom(ctx, db, long), kv.ErrRunaway)

	rep := decode[watchesReport](t, kvctl(t, "groups", "watches", "--addr", addr, "--json").ok(t))
	assert.True(t, rep.Judged)
	assert.Zero(t, rep.Evicted)
	require.Len(t, rep.Watches, 3)
	byIdentity := map[string]watchRow{}
	for _, w := range rep.Watches {
		assert.Equal(t, resource.DefaultGroup, w.Group, "without resource control")
		assert.Equal(t, resource.RunawayKill, w.Action)
		assert.InDelta(t, float64(time.Hour), float64(w.ExpiresIn), float64(time.Minute))
		assert.WithinDuration(t, time.Now().Add(time.Hour), w.Expires, time.Minute)
		byIdentity[w.identity()] = w
	}
	cut := "key " + string(long[:resource.MaxWatchKeyLen]) + "…"
	assert.Contains(t, byIdentity, "open start")
	assert.Contains(t, byIdentity, "task 42")
	require.Contains(t, byIdentity, cut)
	assert.True(t, byIdentity[cut].StartKeyCut)
	assert.Nil(t, byIdentity["task 42"].StartKey, "a task id is the identity, not the key")

	out := kvctl(t, "groups", "watches", "--addr", addr).ok(t)
	assert.True(t, strings.HasPrefix(out, "GROUP    ACTION  EXPIRES IN  IDENTITY\n"), out)
	assert.Regexp(t, `default\s+kill\s+(59m\d+s|1h0m0s)\s+open start\n`, out)
	assert.Regexp(t, `default\s+kill\s+(59m\d+s|1h0m0s)\s+task 42\n`, out)
	assert.Contains(t, out, cut+"\n")
	hex := kvctl(t, "groups", "watches", "--hex", "--addr", addr).ok(t)
	assert.Contains(t, hex, "key 0x6b3030313030212121")
	assert.Contains(t, hex, "21…\n")
	assert.Contains(t, hex, "open start\n", "not 0x, the empty key's hex")

	_, addr = liveStore(t, kv.Options{Scheduler: kv.SchedulerDirect})
	assert.Equal(t, "no read pool (scheduler direct): reads are not judged, nor watched\n", kvctl(t, "groups", "watches", "--addr", addr).ok(t))
	rep = decode[watchesReport](t, kvctl(t, "groups", "watches", "--addr", addr, "--json").ok(t))
	assert.False(t, rep.Judged)
	assert.Empty(t, rep.Watches)
}

// A key that is not printable shows as hex; an expired watch not yet
// dropped shows 0s left; evictions are noted.
func TestWatchesReport_WriteText(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rep := newWatchesReport(&resource.RunawayStats{WatchesEvicted: 3, Watches: []resource.RunawayWatch{
		{Group: "batch", StartKey: []byte{0, 1}, Action: resource.RunawayCooldown, Expires: now.Add(-time.Millisecond)},
		{Group: "oltp", StartKey: []byte("0xff"), Action: resource.RunawayDryRun, Expires: now.Add(500 * time.Millisecond)},
		{Group: "oltp", TaskID: 9, Action: resource.RunawayKill, Expires: now.Add(90*time.Second + 400*time.Millisecond)},
	}}, now, false)
	var b strings.Builder
	require.NoError(t, rep.WriteText(&b))
	assert.Equal(t, `GROUP  ACTION    EXPIRES IN  IDENTITY
batch  cooldown  0s          key 0x0001
oltp   dryrun    500ms       key 0x30786666
oltp   kill      1m30s       task 9
3 watches evicted to make room in a full list
`, b.String())
}

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/admin"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// hookWriter is a stdout that calls onFirst on its first write — when top
// has printed its first frame and not yet taken the second snapshot.
type hookWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
	onFirst func()
}

func (w *hookWriter) Write(p []byte) (int, error) {
	w.once.Do(w.onFirst)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *hookWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestTop(t *testing.T) {
	db, addr := liveStore(t, kv.Options{ResourceControl: true, Workers: 2})
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "oltp", RUPerSec: 500, Burstable: true}))
	load(t, db, "")
	// Between the two snapshots, reads that make every rate positive.
	w := &hookWriter{onFirst: func() { reads(t, db, "oltp", 100) }}
	r := kvctlWith(t, t.Context(), w, "top", "--count", "2", "--interval", "50ms", "--addr", addr, "--json")
	require.Equal(t, 0, r.code, r.stderr)

	frames := decodeLines[topFrame](t, w.String())
	require.Len(t, frames, 2)
	first, second := frames[0], frames[1]
	assert.Equal(t, kv.SchedulerPriority, first.Scheduler)
	assert.True(t, first.ResourceControl)
	require.NotNil(t, first.Pool)
	assert.Equal(t, 2, first.Pool.Workers)
	assert.Zero(t, first.WindowSec, "no rates on the first frame")
	assert.Nil(t, first.Pool.StepsPerSec)
	assert.Nil(t, first.Pool.QueueWaitP99)
	for _, g := range first.Groups {
		assert.Nil(t, g.RURate, g.Name)
	}

	assert.Positive(t, second.WindowSec)
	assert.True(t, second.Time.After(first.Time))
	p := second.Pool
	require.NotNil(t, p)
	require.NotNil(t, p.StepsPerSec)
	assert.GreaterOrEqual(t, *p.StepsPerSec, 101/second.WindowSec, "at least the hook's reads")
	require.NotNil(t, p.CompletedPerSec)
	assert.GreaterOrEqual(t, *p.CompletedPerSec, 101/second.WindowSec)
	require.NotNil(t, p.QueueWaits)
	require.NotNil(t, p.QueueWaitP99, "tasks waited in the window")
	assert.Positive(t, *p.QueueWaits)
	assert.Positive(t, *p.QueueWaitP99)
	var oltp *topGroup
	for i, g := range second.Groups {
		require.NotNil(t, g.RURate, g.Name)
		assert.GreaterOrEqual(t, *g.RURate, 0.0, g.Name)
		if g.Name == "oltp" {
			oltp = &second.Groups[i]
		}
	}
	require.NotNil(t, oltp)
	assert.Positive(t, *oltp.RURate, "the hook's reads ran in oltp")
	assert.InDelta(t, 500, oltp.RUPerSec, 0)
}

func TestTop_Text(t *testing.T) {
	_, addr := liveStore(t, kv.Options{})
	out := kvctl(t, "top", "--count", "2", "--interval", "10ms", "--addr", addr).ok(t)
	assert.NotContains(t, out, "\x1b[", "stdout is not a terminal: no screen to clear")
	for _, s := range []string{"kvctl top", "steps/s", "completed/s", "queue-wait p99", "resource control off", "GROUP", "RU/S NOW", "default"} {
		assert.Contains(t, out, s)
	}
}

func TestTop_Direct(t *testing.T) {
	_, addr := liveStore(t, kv.Options{Scheduler: kv.SchedulerDirect})
	frames := decodeLines[topFrame](t, kvctl(t, "top", "--count", "2", "--interval", "10ms", "--addr", addr, "--json").ok(t))
	require.Len(t, frames, 2)
	assert.Nil(t, frames[1].Pool)
	assert.Contains(t, kvctl(t, "top", "--count", "1", "--addr", addr).ok(t), "no read pool (scheduler direct)")
}

// Reads refused busy (pool full, estimated wait) and runaway reads show
// with their rates; without resource control the runaway reads are the
// group "default"'s (kv.Options.Runaway).
func TestTop_BusyAndRunaway(t *testing.T) {
	db, addr, g := gatedStore(t, kv.Options{TimeSlice: 100 * time.Microsecond, NoWarm: true,
		Runaway: &resource.RunawayRule{RowsScanned: 10, Action: resource.RunawayKill, Watch: time.Hour}})
	var full int
	w := &hookWriter{onFirst: func() {
		full = refusals(t, db, g)
		runaway(t, t.Context(), db)
	}}
	r := kvctlWith(t, t.Context(), w, "top", "--count", "2", "--interval", "50ms", "--addr", addr, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	frames := decodeLines[topFrame](t, w.String())
	require.Len(t, frames, 2)

	first, second := frames[0], frames[1]
	require.NotNil(t, first.Pool)
	assert.Zero(t, first.Pool.BusyFull)
	assert.Zero(t, first.Pool.BusyWait)
	assert.Nil(t, first.Pool.BusyFullPerSec, "no rates on the first frame")
	require.NotNil(t, first.Runaway, "the pool's reads are judged, rule or not")
	assert.Empty(t, first.Runaway.Groups)
	assert.Zero(t, first.Runaway.Watches)

	p := second.Pool
	require.NotNil(t, p)
	assert.EqualValues(t, full, p.BusyFull)
	assert.EqualValues(t, 1, p.BusyWait)
	require.NotNil(t, p.BusyFullPerSec)
	require.NotNil(t, p.BusyWaitPerSec)
	assert.InDelta(t, float64(full)/second.WindowSec, *p.BusyFullPerSec, 1e-9)
	assert.InDelta(t, 1/second.WindowSec, *p.BusyWaitPerSec, 1e-9)
	assert.Equal(t, readpool.WaitStats{Refused: 1, Started: 1, WithinLimit: 1, WithinEstimate: 1}, p.Waits)
	rw := second.Runaway
	require.NotNil(t, rw)
	require.Len(t, rw.Groups, 1)
	def := rw.Groups[0]
	assert.Equal(t, resource.RunawayGroupStats{Group: resource.DefaultGroup, Kill: 2, Watched: 1}, def.RunawayGroupStats)
	require.NotNil(t, def.KillPerSec)
	assert.InDelta(t, 2/second.WindowSec, *def.KillPerSec, 1e-9)
	assert.Zero(t, *def.DryRunPerSec)
	assert.Equal(t, 1, rw.Watches)

	out := kvctl(t, "top", "--count", "1", "--addr", addr).ok(t)
	assert.Regexp(t, `busy: full 1\s+wait 1\s+started within limit 100.0%, within estimate 100.0% \(of 1 with a limit\)\n`, out)
	assert.Contains(t, out, "runaway reads (live watches: 1)\n")
	assert.Regexp(t, `GROUP\s+DRYRUN\s+COOLDOWN\s+KILL\s+BY WATCH\ndefault\s+0\s+0\s+2\s+1\n`, out)
}

// A frame from two snapshots: the busy refusals' and the runaway reads'
// rates over the window, a group new in it counted from 0, and the text.
func TestTopFrame_BusyAndRunaway(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	snap := func(at time.Time, full, wait int64, waits readpool.WaitStats, rs *resource.RunawayStats) *snapshot {
		waits.Refused = wait
		return &snapshot{at: at, stats: kv.Stats{Scheduler: kv.SchedulerPriority, Runaway: rs,
			Pool: &readpool.Stats{Workers: 2, RejectedBusy: full, Waits: waits}}}
	}
	prev := snap(t0, 1, 2, readpool.WaitStats{Started: 10, WithinLimit: 9, WithinEstimate: 8},
		&resource.RunawayStats{Groups: []resource.RunawayGroupStats{{Group: "batch", Kill: 1}}})
	cur := snap(t0.Add(2*time.Second), 5, 4, readpool.WaitStats{Started: 20, WithinLimit: 19, WithinEstimate: 15},
		&resource.RunawayStats{
			Groups:  []resource.RunawayGroupStats{{Group: "batch", Kill: 3, Watched: 1}, {Group: "oltp", Cooldown: 2}},
			Watches: []resource.RunawayWatch{{Group: "batch", TaskID: 7, Action: resource.RunawayKill}}, OtherGroups: 4, WatchesEvicted: 6,
		})
	f := frame(prev, cur)
	assert.InDelta(t, 2, f.WindowSec, 0)
	require.NotNil(t, f.Pool.BusyFullPerSec)
	assert.InDelta(t, 2, *f.Pool.BusyFullPerSec, 1e-9, "4 more over 2 s")
	assert.InDelta(t, 1, *f.Pool.BusyWaitPerSec, 1e-9)
	require.Len(t, f.Runaway.Groups, 2)
	batch, oltp := f.Runaway.Groups[0], f.Runaway.Groups[1]
	assert.InDelta(t, 1, *batch.KillPerSec, 1e-9)
	assert.InDelta(t, 1, *oltp.CooldownPerSec, 1e-9, "new in the window: from 0")
	assert.Zero(t, *oltp.KillPerSec)

	var b strings.Builder
	require.NoError(t, f.WriteText(&b))
	out := b.String()
	t.Log(out)
	assert.Regexp(t, `busy: full 5 \(2.0/s\)\s+wait 4 \(1.0/s\)\s+started within limit 95.0%, within estimate 75.0% \(of 20 with a limit\)\n`, out)
	assert.Contains(t, out, "runaway reads (live watches: 1, 6 evicted from a full list)\n")
	assert.Regexp(t, `batch\s+0 \(0.0/s\)\s+0 \(0.0/s\)\s+3 \(1.0/s\)\s+1\n`, out)
	assert.Regexp(t, `oltp\s+0 \(0.0/s\)\s+2 \(1.0/s\)\s+0 \(0.0/s\)\s+0\n`, out)
	assert.Contains(t, out, "(other groups)  4 in all\n")

	// Counts that went back (another store): no rates.
	back := frame(cur, prev)
	assert.Nil(t, back.Pool.BusyFullPerSec)
	assert.Nil(t, back.Runaway.Groups[0].KillPerSec)

	// Nothing yet: one line, and no estimates before a read had a limit.
	empty := frame(nil, snap(t0, 0, 0, readpool.WaitStats{}, &resource.RunawayStats{}))
	b.Reset()
	require.NoError(t, empty.WriteText(&b))
	assert.Regexp(t, `busy: full 0\s+wait 0\n`, b.String())
	assert.Contains(t, b.String(), "runaway reads: none (live watches: 0)\n")

	// The direct scheduler: no pool, nothing judged.
	direct := frame(nil, &snapshot{at: t0, stats: kv.Stats{Scheduler: kv.SchedulerDirect}})
	assert.Nil(t, direct.Runaway)
	b.Reset()
	require.NoError(t, direct.WriteText(&b))
	assert.NotContains(t, b.String(), "runaway")
	assert.NotContains(t, b.String(), "busy:")
}

// Ctrl-C ends top with status 130 and no message.
func TestTop_Interrupt(t *testing.T) {
	_, addr := liveStore(t, kv.Options{})
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	w := &hookWriter{onFirst: func() { cancel(cli.SignalError{Sig: os.Interrupt}) }}
	r := kvctlWith(t, ctx, w, "top", "--interval", "10ms", "--addr", addr)
	assert.Equal(t, 130, r.code)
	assert.Empty(t, r.stderr)
	assert.Contains(t, w.String(), "kvctl top")
}

// A 503 (kvbench between two stores) is shown and waited out; the rates
// start afresh after it.
func TestTop_WaitsOutUnavailable(t *testing.T) {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	h := admin.Handler(db)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 3 { // the second refresh's /stats
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error": "kvbench is between phases; no store open"}`))
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	frames := decodeLines[topFrame](t, kvctl(t, "top", "--count", "4", "--interval", "10ms", "--addr", srv.URL, "--json").ok(t))
	require.Len(t, frames, 4)
	assert.Empty(t, frames[0].Note)
	assert.Equal(t, "kvbench is between phases; no store open", frames[1].Note)
	assert.Nil(t, frames[2].Pool.StepsPerSec, "no rates across the gap")
	assert.NotNil(t, frames[3].Pool.StepsPerSec)
}

// summary builds a cumulative histogram from per-bucket counts at bounds
// 1, 2, 4, 8 µs, and past the last.
func summary(perBucket []uint64, over uint64) readpool.DurationSummary {
	var s readpool.DurationSummary
	var cum uint64
	for i, c := range perBucket {
		cum += c
		s.Buckets = append(s.Buckets, readpool.Bucket{Le: time.Microsecond << i, Count: cum})
	}
	s.Count = cum + over
	return s
}

func TestWindowQuantile(t *testing.T) {
	zero := summary([]uint64{0, 0, 0, 0}, 0)
	for _, tc := range []struct {
		name      string
		prev, cur readpool.DurationSummary
		q         float64
		want      time.Duration
		wantN     uint64
		ok        bool
	}{
		{"empty window", zero, zero, 0.99, 0, 0, true},
		{"all in the first bucket", zero, summary([]uint64{100, 0, 0, 0}, 0), 0.5, 500 * time.Nanosecond, 100, true},
		{"interpolated in the third", zero, summary([]uint64{0, 0, 100, 0}, 0), 0.99, 2*time.Microsecond + 1980*time.Nanosecond, 100, true},
		{"p99 in the tail bucket", zero, summary([]uint64{98, 0, 0, 2}, 0), 0.99, 4*time.Microsecond + 2*time.Microsecond, 100, true},
		{"p50 below the tail", zero, summary([]uint64{98, 0, 0, 2}, 0), 0.5, 510 * time.Nanosecond, 100, true},
		{"past the last bucket", zero, summary([]uint64{1, 0, 0, 0}, 99), 0.99, 8 * time.Microsecond, 100, true},
		{
			"only the window counts",
			summary([]uint64{1000, 0, 0, 0}, 0), summary([]uint64{1000, 0, 0, 10}, 0),
			0.99, 4*time.Microsecond + 3960*time.Nanosecond, 10, true,
		},
		{"counts went back", summary([]uint64{5, 0, 0, 0}, 0), zero, 0.99, 0, 0, false},
		{"bucket went back", summary([]uint64{5, 0, 0, 0}, 0), summary([]uint64{0, 5, 0, 0}, 0), 0.99, 0, 0, false},
		{"different buckets", summary([]uint64{0, 0}, 0), zero, 0.99, 0, 0, false},
		{"different bounds", summary([]uint64{0, 0, 0, 0}, 0), func() readpool.DurationSummary {
			s := summary([]uint64{1, 0, 0, 0}, 0)
			s.Buckets[3].Le = time.Second
			return s
		}(), 0.99, 0, 0, false},
		{"no buckets at all", readpool.DurationSummary{}, readpool.DurationSummary{Count: 3}, 0.99, 0, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, n, ok := windowQuantile(tc.prev, tc.cur, tc.q)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.wantN, n)
			assert.InDelta(t, float64(tc.want), float64(d), 1, "got %v, want %v", d, tc.want)
		})
	}
}

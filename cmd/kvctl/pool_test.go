package main

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/admin"
	"github.com/coopkv/coopkv/kv/kvtest/faultfs"
	"github.com/coopkv/coopkv/readpool"
)

func TestPool(t *testing.T) {
	db, addr := liveStore(t, kv.Options{Workers: 2})
	require.NoError(t, db.Flush()) // so that Gets read a table
	load(t, db, "")
	reads(t, db, "", 100)

	rep := decode[poolReport](t, kvctl(t, "pool", "--addr", addr, "--json").ok(t))
	assert.Equal(t, kv.SchedulerMLFQ, rep.Scheduler)
	assert.False(t, rep.Closed)
	p := rep.Pool
	require.NotNil(t, p)
	assert.Equal(t, 2, p.Workers)
	assert.Equal(t, 128, p.MaxWorkers, "64 × Workers by default")
	assert.Zero(t, p.Blocked, "in memory no read waits on the disk")
	assert.Zero(t, p.Slack)
	assert.GreaterOrEqual(t, p.Spawned, int64(101))
	assert.GreaterOrEqual(t, p.Completed, int64(101))
	assert.GreaterOrEqual(t, p.Steps, int64(101))
	assert.LessOrEqual(t, p.Completed, p.Spawned)
	assert.Equal(t, "mlfq", p.Queue.Kind)
	require.Len(t, p.Queue.Levels, 3)
	require.Len(t, rep.LevelShares, 3)
	var sum float64
	var steps int64
	for i, s := range rep.LevelShares {
		assert.GreaterOrEqual(t, s, 0.0)
		sum += s
		steps += p.Queue.Levels[i].Steps
	}
	assert.InDelta(t, 1, sum, 1e-9)
	assert.Positive(t, steps)
	assert.InDelta(t, p.Queue.Level0Share, rep.LevelShares[0], 1e-9, "kvctl's level-0 share is the pool's")
	assert.GreaterOrEqual(t, p.StepTime.Count, uint64(101))
	assert.LessOrEqual(t, p.StepTime.P50, p.StepTime.P99)
	assert.LessOrEqual(t, p.StepTime.P99, p.StepTime.Max)
	assert.Positive(t, p.StepTime.Max)
	assert.NotEmpty(t, p.QueueWait.Buckets)
	assert.Equal(t, 1, p.Spares)
	c := rep.Caches
	assert.Equal(t, db.Options().CacheSize, c.BlockCacheCapacity)
	assert.Positive(t, c.MemTableSize)
	assert.False(t, c.RowCache, "liveStore turns it off")
	d := rep.Disk
	assert.Positive(t, d.TableReads)
	assert.Positive(t, d.TableReadTime)
	assert.Equal(t, d.TableReadTime/time.Duration(d.TableReads), d.MeanTableRead)

	out := kvctl(t, "pool", "--addr", addr).ok(t)
	for _, s := range []string{
		"scheduler  mlfq (queue mlfq)", "workers", "at most 128 with extras", "busy", "(in use)", "parked", "extra",
		"blocked    0 steps waiting on the disk; slack 0", "table reads", "mean", "reads made while slow",
		"share of step time", "chance (target)", "rejected_busy", "inline",
		"queue wait", "step time", "p99", "long", "preempted", "yields", "bypassed", "caller hand-offs", "stepped by their consumer",
		"by the spares", "spare 1", "local queues", "taken in batches", "stolen", "block cache",
	} {
		assert.Contains(t, out, s)
	}
	assert.Regexp(t, `row cache\s+off\n`, out)
}

func TestPool_Direct(t *testing.T) {
	_, addr := liveStore(t, kv.Options{Scheduler: kv.SchedulerDirect})
	out := kvctl(t, "pool", "--addr", addr, "--json").ok(t)
	m := decode[map[string]any](t, out)
	assert.Equal(t, "direct", m["scheduler"])
	assert.Contains(t, m, "pool")
	assert.Nil(t, m["pool"])
	assert.Equal(t, "no read pool (scheduler direct)\n", kvctl(t, "pool", "--addr", addr).ok(t))
}

// TestPoolReport_WriteText: the workers in use against the workers and
// their bound, the steps off the CPU, and the table reads with their mean
// and the disk's state, as the text shows them.
func TestPoolReport_WriteText(t *testing.T) {
	for _, tc := range []struct {
		name string
		disk tableReads
		want string
	}{
		{"fast disk", tableReads{}, "table reads  0, mean 0s; disk fast, 0 reads made while slow\n"},
		{"slow disk", newTableReads(&kv.StorageStats{TableReads: 3000, TableReadTime: 600 * time.Millisecond, DiskSlow: true, SlowTableReads: 2900}),
			"table reads  3000, mean 200µs; disk slow (a read waiting on it lets another run), 2900 reads made while slow\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := poolReport{Scheduler: kv.SchedulerMLFQ, Disk: tc.disk, Pool: &readpool.Stats{
				Workers: 2, MaxWorkers: 128, Busy: 5, Parked: 0, Extra: 3, Spares: 1, Blocked: 4, Slack: 1,
				Queue: readpool.QueueStats{Kind: "fifo"},
			}}
			var b strings.Builder
			require.NoError(t, rep.WriteText(&b))
			out := b.String()
			t.Log(out)
			assert.Contains(t, out, "workers    2, at most 128 with extras: busy 5 (in use), parked 0, extra 3, spare 1\n")
			assert.Contains(t, out, "blocked    4 steps waiting on the disk; slack 1 (steps the CPU controller lets run beside them)\n")
			assert.Contains(t, out, tc.want)
			assert.True(t, strings.HasSuffix(out, "warming      off\nsweeping     off (keys cannot expire in this store)\n"), "ends with the warmer's and the sweeper's lines")
		})
	}
}

func TestNewTableReads_NoReadsNoMean(t *testing.T) {
	assert.Equal(t, tableReads{TableReadTime: time.Second}, newTableReads(&kv.StorageStats{TableReadTime: time.Second}))
	assert.Equal(t, 250*time.Microsecond, newTableReads(&kv.StorageStats{TableReads: 4, TableReadTime: time.Millisecond}).MeanTableRead)
}

func TestShortDur(t *testing.T) {
	for d, want := range map[int64]string{
		0: "0s", -5: "0s", 999: "999ns", 1234: "1.23µs", 1234567: "1.23ms", 17_179_869_184: "17.2s", 999_999: "1ms",
	} {
		assert.Equal(t, want, shortDur(durationNS(d)), "%d", d)
	}
}

func durationNS(n int64) time.Duration { return time.Duration(n) }

// TestPool_FailedStore shows a running store that a failed WAL sync has
// failed: the cause in --json, a line that says so in the text.
func TestPool_FailedStore(t *testing.T) {
	inj := faultfs.SyncFaults()
	db, err := kv.Open("", &kv.Options{FS: errorfs.Wrap(vfs.NewMem(), inj), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	srv := httptest.NewServer(admin.Handler(db))
	defer srv.Close()
	inj.On()
	require.ErrorIs(t, db.Set([]byte("k"), []byte("v")), kv.ErrFailed)
	inj.Off()
	addr := srv.Listener.Addr().String()

	rep := decode[poolReport](t, kvctl(t, "pool", "--addr", addr, "--json").ok(t))
	assert.Contains(t, rep.Failed, "injected error")
	assert.Contains(t, kvctl(t, "pool", "--addr", addr).ok(t), "store FAILED, writes refused")
	assert.ErrorIs(t, db.Close(), kv.ErrFailed)
}

// TestPool_PriorityShowsClasses: under resource control the queue's levels
// are priority classes; kvctl shows them so, without MLFQ shares.
func TestPool_PriorityShowsClasses(t *testing.T) {
	_, addr := liveStore(t, kv.Options{ResourceControl: true})
	rep := decode[poolReport](t, kvctl(t, "pool", "--addr", addr, "--json").ok(t))
	assert.Nil(t, rep.LevelShares, "no MLFQ shares")
	out := kvctl(t, "pool", "--addr", addr).ok(t)
	assert.Regexp(t, `class\s+queued\nhigh\s+\d+\nmedium\s+\d+\nlow\s+\d+\n`, out)
	assert.NotContains(t, out, "share of step time")
}

func TestSweepLine(t *testing.T) {
	assert.Equal(t, "sweeping\toff (keys cannot expire in this store)", sweepLine(&kv.SweepStats{}))
	s := kv.SweepStats{Enabled: true, Passes: 3, Expired: 10, Swept: 9, Beaten: 1}
	assert.Equal(t, "sweeping\t3 passes (none yet); 10 keys found expired, 9 deleted, 1 rewritten first", sweepLine(&s))
	s.LastPass = time.Date(2026, 12, 6, 14, 0, 0, 0, time.UTC)
	assert.Contains(t, sweepLine(&s), "(last ended 2026-12-06T14:00:00Z)")
}

func TestWarmLine(t *testing.T) {
	assert.Equal(t, "warming\toff", warmLine(&kv.WarmStats{}))
	w := kv.WarmStats{Enabled: true, Last: "cache full", SpansQueued: 9, SpansWarmed: 7, PendingSpans: 2, PendingBytes: 3 << 20,
		Keys: 1000, BlockBytes: 5 << 20, Busy: 20 * time.Millisecond}
	assert.Equal(t, "warming\tidle, last: cache full; 7 of 9 spans warmed (2 pending, 3.00 MiB of tables), 1000 keys, 5.00 MiB read into the block cache in 20ms", warmLine(&w))
	w.Running, w.HotSetTables, w.HotSetQueued, w.HotSetRows, w.RowsRead = true, 4, 3, 50, 20
	assert.Contains(t, warmLine(&w), "warming\trunning;")
	assert.Contains(t, warmLine(&w), "; hot set: 3 of 4 tables queued, 20 of 50 row-cache keys read back, not yet done")
	w.HotSetWarmedIn = 1500 * time.Millisecond
	assert.Contains(t, warmLine(&w), "done in 1.5s")
}

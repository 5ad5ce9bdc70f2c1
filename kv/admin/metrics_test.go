package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
	dto "github.com/prometheus/client_model/go"
)

// scrape reads /metrics once and returns its families by name.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rep := do(t, h, http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, rep.code)
	fams, err := parseMetrics(rep.body)
	require.NoError(t, err, "metrics must parse:\n%s", rep.body)
	return fams
}

// value is the one unlabelled series of the family name, a gauge's or a
// counter's, checking the family's type.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "missing %s", name)
	require.Equal(t, typ, f.GetType(), name)
	require.Len(t, f.Metric, 1, name)
	if typ == dto.MetricType_COUNTER {
		return f.Metric[0].GetCounter().GetValue()
	}
	return f.Metric[0].GetGauge().GetValue()
}

// writeTables writes n keys of prefix with 1 KB values and flushes them to
// a table, so that Gets of them read the table from the filesystem.
func writeTables(t *testing.T, db *kv.DB, prefix string, n int) {
	t.Helper()
	b := db.NewBatch()
	for i := range n {
		b.Set(fmt.Appendf(nil, "%s%04d", prefix, i), make([]byte, 1000))
	}
	require.NoError(t, db.Apply(b))
	require.NoError(t, db.Flush())
}

// TestMetrics_PoolBoundsAndTableReads: the pool's bound and its blocked
// and slack steps, and the table reads, are in /metrics with the store's
// values; /stats carries them too.
func TestMetrics_PoolBoundsAndTableReads(t *testing.T) {
	// A block cache smaller than the table, and no row cache: every
	// pass of Gets reads the table again.
	db, err := kv.Open("", &kv.Options{InMemory: true, Workers: 2, CacheSize: 1 << 20, RowCacheSize: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	writeTables(t, db, "t", 2000)
	for i := range 2000 {
		_, err := db.Get(context.Background(), fmt.Appendf(nil, "t%04d", i))
		require.NoError(t, err)
	}
	h := Handler(db)

	// Compactions may read tables meanwhile: the scrape's figures lie
	// between two snapshots taken around it.
	before := db.Stats().Storage
	fams := scrape(t, h)
	after := db.Stats().Storage

	reads := value(t, fams, "coopkv_storage_table_reads_total", dto.MetricType_COUNTER)
	assert.Positive(t, reads)
	assert.GreaterOrEqual(t, reads, float64(before.TableReads))
	assert.LessOrEqual(t, reads, float64(after.TableReads))
	secs := value(t, fams, "coopkv_storage_table_read_seconds_total", dto.MetricType_COUNTER)
	assert.Positive(t, secs)
	assert.GreaterOrEqual(t, secs, before.TableReadTime.Seconds())
	assert.LessOrEqual(t, secs, after.TableReadTime.Seconds())
	slow := value(t, fams, "coopkv_storage_slow_table_reads_total", dto.MetricType_COUNTER)
	assert.GreaterOrEqual(t, slow, float64(before.SlowTableReads))
	assert.LessOrEqual(t, slow, float64(after.SlowTableReads))
	assert.Contains(t, []float64{0, 1}, value(t, fams, "coopkv_storage_disk_slow", dto.MetricType_GAUGE))

	assert.Equal(t, float64(db.Options().MaxWorkers), value(t, fams, "coopkv_pool_max_workers", dto.MetricType_GAUGE))
	assert.Equal(t, 128.0, value(t, fams, "coopkv_pool_max_workers", dto.MetricType_GAUGE), "64 × Workers by default")
	// In memory no read waits on the disk, so none is blocked and the
	// controller lets no step run beyond them.
	assert.Zero(t, value(t, fams, "coopkv_pool_blocked_steps", dto.MetricType_GAUGE))
	assert.Zero(t, value(t, fams, "coopkv_pool_slack_steps", dto.MetricType_GAUGE))
	busy := value(t, fams, "coopkv_pool_busy_workers", dto.MetricType_GAUGE)
	assert.GreaterOrEqual(t, busy, 0.0)
	assert.LessOrEqual(t, busy, 128.0)

	// /stats marshals kv.Stats whole: the same figures under their JSON names.
	var st struct{ Pool, Storage map[string]any }
	require.NoError(t, json.Unmarshal(do(t, h, http.MethodGet, "/stats", "").body, &st))
	for _, k := range []string{"busy", "extra", "max_workers", "blocked", "slack"} {
		assert.Contains(t, st.Pool, k)
	}
	assert.EqualValues(t, 128, st.Pool["max_workers"])
	for _, k := range []string{"table_reads", "table_read_time_ns", "disk_slow", "slow_table_reads"} {
		assert.Contains(t, st.Storage, k)
	}
	assert.Positive(t, st.Storage["table_reads"])
}

// slowFS is a disk whose table reads each take 100 µs (so the store counts
// it slow after a few), and whose reads of a table's first data block
// (offset 0) block on release while armed, saying so on entered. Pebble's
// background work reads a new table's index and properties, never its
// data, so only a Get meets the gate.
type slowFS struct {
	vfs.FS
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (fs *slowFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || len(name) < 4 || name[len(name)-4:] != ".sst" {
		return f, err
	}
	return &slowFile{File: f, fs: fs}, nil
}

type slowFile struct {
	vfs.File
	fs *slowFS
}

func (f *slowFile) ReadAt(p []byte, off int64) (int, error) {
	// A latency to simulate, not a wait for a condition: the store's
	// moving average counts each read at most 60 µs, so any read this
	// long counts fully, however the machine schedules it.
	time.Sleep(100 * time.Microsecond)
	if off == 0 && f.fs.armed.Load() {
		f.fs.entered <- struct{}{}
		<-f.fs.release
	}
	return f.File.ReadAt(p, off)
}

// TestMetrics_BlockedStepOnASlowDisk: while a Get waits on a slow disk,
// /metrics says the disk is slow, counts the slow reads, and shows the
// step blocked off the CPU.
func TestMetrics_BlockedStepOnASlowDisk(t *testing.T) {
	fs := &slowFS{FS: vfs.NewMem(), entered: make(chan struct{}), release: make(chan struct{})}
	db, err := kv.Open("", &kv.Options{FS: fs, Workers: 1, RowCacheSize: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	h := Handler(db)

	// Reads of ~250 data blocks at 100 µs each make the disk slow: six in
	// a row are enough.
	writeTables(t, db, "a", 1000)
	for i := range 1000 {
		_, err := db.Get(context.Background(), fmt.Appendf(nil, "a%04d", i))
		require.NoError(t, err)
	}
	// A second table, whose first data block no Get has read yet.
	writeTables(t, db, "b", 1)

	fs.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := db.Get(context.Background(), []byte("b0000"))
		done <- err
	}()
	within(t, fs.entered, "the Get's read of the second table")
	fams := scrape(t, h)
	fs.armed.Store(false)
	close(fs.release)
	require.NoError(t, within(t, done, "the Get, released"))

	assert.Equal(t, 1.0, value(t, fams, "coopkv_storage_disk_slow", dto.MetricType_GAUGE))
	assert.Positive(t, value(t, fams, "coopkv_storage_slow_table_reads_total", dto.MetricType_COUNTER))
	reads := value(t, fams, "coopkv_storage_table_reads_total", dto.MetricType_COUNTER)
	assert.GreaterOrEqual(t, reads, 250.0)
	assert.GreaterOrEqual(t, value(t, fams, "coopkv_storage_table_read_seconds_total", dto.MetricType_COUNTER), reads*100e-6,
		"every read took 100 µs at least")
	// Pebble's background reads count as blocked too while the disk is
	// slow: at least the Get's.
	assert.GreaterOrEqual(t, value(t, fams, "coopkv_pool_blocked_steps", dto.MetricType_GAUGE), 1.0)
	assert.Equal(t, 64.0, value(t, fams, "coopkv_pool_max_workers", dto.MetricType_GAUGE))
}

// within waits for ch, failing the test if it takes longer than a minute:
// a wait that long has hung, on any machine.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		require.FailNow(t, "hung: "+what)
		panic("unreachable")
	}
}

// TestMetrics_Warming: the warmer's figures, as Stats has them, between
// two snapshots taken around the scrape; a store with warming off has
// none.
func TestMetrics_Warming(t *testing.T) {
	db, err := kv.Open("", &kv.Options{InMemory: true, RowCacheSize: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	writeTables(t, db, "w", 2000)
	h := Handler(db)

	before := db.Stats().Warm
	fams := scrape(t, h)
	after := db.Stats().Warm
	require.True(t, before.Enabled)
	keys := value(t, fams, "coopkv_warm_keys_total", dto.MetricType_COUNTER)
	assert.GreaterOrEqual(t, keys, float64(before.Keys))
	assert.LessOrEqual(t, keys, float64(after.Keys))
	assert.Positive(t, after.SpansQueued, "the flushes' tables were queued")
	for _, name := range []string{"coopkv_warm_block_bytes_total", "coopkv_warm_step_seconds_total", "coopkv_warm_rows_total"} {
		assert.GreaterOrEqual(t, value(t, fams, name, dto.MetricType_COUNTER), 0.0, name)
	}
	assert.Len(t, fams["coopkv_warm_stood_down_total"].GetMetric(), 4, "one per reason")

	off, err := kv.Open("", &kv.Options{InMemory: true, NoWarm: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, off.Close()) })
	assert.NotContains(t, scrape(t, Handler(off)), "coopkv_warm_keys_total")
}

// TestMetrics_Sweeping: the sweeper's figures, once it has deleted keys
// that expired a nanosecond after their write; a store whose keys cannot
// expire has none.
func TestMetrics_Sweeping(t *testing.T) {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	for i := range 10 {
		require.NoError(t, db.SetWithTTL(fmt.Appendf(nil, "s%d", i), []byte("v"), time.Nanosecond))
	}
	require.Eventually(t, func() bool { return db.Stats().Sweep.Swept == 10 }, 10*time.Second, time.Millisecond)
	fams := scrape(t, Handler(db))
	assert.EqualValues(t, 10, value(t, fams, "coopkv_sweep_swept_total", dto.MetricType_COUNTER))
	assert.EqualValues(t, 10, value(t, fams, "coopkv_sweep_expired_total", dto.MetricType_COUNTER))
	assert.GreaterOrEqual(t, value(t, fams, "coopkv_sweep_passes_total", dto.MetricType_COUNTER), 1.0)
}

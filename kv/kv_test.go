package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/resource"
)

func keyN(i int) []byte { return fmt.Appendf(nil, "key%08d", i) }

func load(t testing.TB, db *DB, n int, value func(i int) []byte) {
	t.Helper()
	b := db.NewBatch()
	for i := range n {
		b.Set(keyN(i), value(i))
		if b.Len() == 1000 || i == n-1 {
			require.NoError(t, db.Apply(b))
			b = db.NewBatch()
		}
	}
}

func TestScan_SnapshotIsolationAcrossYields(t *testing.T) {
	// A tiny slice makes every step yield after one batch.
	db := openTest(t, "", &Options{InMemory: true, TimeSlice: time.Microsecond})
	const n = 20000
	load(t, db, n, func(i int) []byte { return []byte("old") })

	it := db.Scan(context.Background(), nil, nil, nil)
	defer it.Close()
	require.True(t, it.Next())
	// Writes during the scan: overwrite every key, delete some, add more.
	b := db.NewBatch()
	for i := range n {
		if i%7 == 0 {
			b.Delete(keyN(i))
		} else {
			b.Set(keyN(i), []byte("new"))
		}
	}
	b.Set(keyN(n+1), []byte("new"))
	require.NoError(t, db.Apply(b))

	rows := 1
	assert.Equal(t, "old", string(it.Value()))
	for it.Next() {
		require.Equal(t, "old", string(it.Value()), "key %s", it.Key())
		rows++
	}
	require.NoError(t, it.Err())
	assert.Equal(t, n, rows, "deletes and inserts after the scan began are invisible")
	st := it.Stats()
	assert.GreaterOrEqual(t, st.Yields, 5, "the scan yielded many times: %+v", st)
	assert.EqualValues(t, n, st.Rows)
	got, err := db.Get(context.Background(), keyN(1))
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
}

func TestScan_BoundedBuffering(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		db := openTest(t, "", &Options{InMemory: true})
		load(t, db, 50000, func(int) []byte { return make([]byte, 32) })
		it := db.Scan(context.Background(), nil, nil, nil)
		defer it.Close()
		require.True(t, it.Next())
		// The consumer stops reading: the task fills its two slots and waits.
		synctest.Wait()
		require.Equal(t, 1, db.Stats().Pool.Pending, "the task waits for a slot")
		st := it.Stats()
		assert.Equal(t, 2, st.Buffered)
		assert.Equal(t, 2, st.MaxBuffered)
		assert.LessOrEqual(t, st.Rows, int64(32+64), "no third batch was read")
		for range 5000 {
			require.True(t, it.Next())
		}
		assert.LessOrEqual(t, it.Stats().MaxBuffered, 2)
		assert.Positive(t, it.Stats().Wakes, "each batch the consumer finished woke the task")
	})
}

func TestScan_Cancellation(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true})
	load(t, db, 30000, func(int) []byte { return make([]byte, 16) })

	t.Run("context cancelled by the consumer", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		it := db.Scan(ctx, nil, nil, nil)
		defer it.Close()
		for range 100 {
			require.True(t, it.Next())
		}
		cancel()
		n := 0
		for it.Next() {
			n++
		}
		assert.ErrorIs(t, it.Err(), context.Canceled)
		assert.Less(t, n, 30000-100, "the scan stopped early")
	})
	t.Run("context cancelled by another goroutine while the consumer waits", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		it := db.Scan(ctx, nil, nil, nil)
		defer it.Close()
		go cancel()
		for it.Next() {
		}
		if it.Err() != nil {
			assert.ErrorIs(t, it.Err(), context.Canceled)
		}
	})
	t.Run("iterator closed by another goroutine", func(t *testing.T) {
		it := db.Scan(context.Background(), nil, nil, nil)
		require.True(t, it.Next())
		closed := make(chan struct{})
		go func() { assert.NoError(t, it.Close()); close(closed) }()
		for it.Next() {
		}
		<-closed
		assert.NoError(t, it.Err())
		assert.False(t, it.Next())
	})
	t.Run("iterator closed before reading", func(t *testing.T) {
		it := db.Scan(context.Background(), nil, nil, nil)
		require.NoError(t, it.Close())
		require.NoError(t, it.Close(), "idempotent")
		assert.False(t, it.Next())
	})
	t.Run("context done before the scan", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		it := db.Scan(ctx, nil, nil, nil)
		assert.False(t, it.Next())
		assert.ErrorIs(t, it.Err(), context.Canceled)
		require.NoError(t, it.Close())
	})
}

func TestScan_DBCloseMidScan(t *testing.T) {
	for _, sched := range []Scheduler{SchedulerMLFQ, SchedulerDirect} {
		t.Run(string(sched), func(t *testing.T) {
			db, err := Open("", &Options{InMemory: true, Scheduler: sched})
			require.NoError(t, err)
			load(t, db, 20000, func(int) []byte { return make([]byte, 16) })
			waiting := db.Scan(context.Background(), nil, nil, nil) // parked, never read again
			require.True(t, waiting.Next())
			reading := db.Scan(context.Background(), nil, nil, nil)
			require.True(t, reading.Next())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for reading.Next() {
				}
			}()
			require.NoError(t, db.Close(), "no Pebble iterator leaked")
			<-done
			if reading.Err() != nil {
				assert.ErrorIs(t, reading.Err(), ErrClosed)
			}
			for waiting.Next() {
			}
			assert.ErrorIs(t, waiting.Err(), ErrClosed)
			require.NoError(t, waiting.Close())
			require.NoError(t, reading.Close())
			it := db.Scan(context.Background(), nil, nil, nil)
			assert.ErrorIs(t, it.Err(), ErrClosed)
		})
	}
}

func TestGet_CacheCoherenceUnderConcurrentWrites(t *testing.T) {
	// A small cache keeps evictions and re-inserts going too.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true, RowCacheSize: 64 << 10})
	const keys, writes, readers = 2, 20000, 4
	var completed [keys]atomic.Uint64 // the last sequence whose Set returned
	enc := func(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
	for k := range keys {
		require.NoError(t, db.Set(keyN(k), enc(0)))
	}
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for k := range keys {
		wg.Go(func() { // one writer per key: its values only grow
			for seq := uint64(1); seq <= writes; seq++ {
				assert.NoError(t, db.Set(keyN(k), enc(seq)))
				completed[k].Store(seq)
			}
		})
	}
	var readersWG sync.WaitGroup
	var stale, reads atomic.Int64
	for r := range readers {
		readersWG.Go(func() {
			for i := 0; !stop.Load(); i++ {
				k := (i + r) % keys
				floor := completed[k].Load()
				v, err := db.Get(ctx, keyN(k))
				if !assert.NoError(t, err) {
					return
				}
				reads.Add(1)
				if got := binary.BigEndian.Uint64(v); got < floor {
					stale.Add(1)
					t.Errorf("key %d: Get returned %d after Set of %d had returned", k, got, floor)
				}
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	readersWG.Wait()
	assert.Zero(t, stale.Load())
	st := db.Stats().RowCache
	assert.Positive(t, st.Hits, "the cache served some reads")
	for k := range keys {
		v, err := db.Get(ctx, keyN(k))
		require.NoError(t, err)
		assert.EqualValues(t, writes, binary.BigEndian.Uint64(v), "the last write is what a later Get sees")
	}
	t.Logf("%d reads, cache %+v", reads.Load(), st)
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	db, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)

	assert.ErrorIs(t, db.Set(nil, []byte("v")), ErrEmptyKey)
	assert.ErrorIs(t, db.Set([]byte{}, []byte("v")), ErrEmptyKey)
	assert.ErrorIs(t, db.Delete(nil), ErrEmptyKey)
	_, err = db.Get(ctx, nil)
	assert.ErrorIs(t, err, ErrEmptyKey)
	b := db.NewBatch()
	b.Set([]byte("ok"), []byte("v"))
	b.Set(nil, []byte("v"))
	assert.ErrorIs(t, db.Apply(b), ErrEmptyKey)
	_, err = db.Get(ctx, []byte("ok"))
	assert.ErrorIs(t, err, ErrNotFound, "a failed batch writes nothing")
	assert.Error(t, db.Apply(nil))

	it := db.Scan(ctx, []byte("b"), []byte("a"), nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), ErrInvalidRange)
	require.NoError(t, it.Close())
	it = db.Scan(ctx, nil, nil, &ScanOptions{Limit: -1})
	assert.ErrorContains(t, it.Err(), "kv: scan [-inf, +inf): kv: negative ScanOptions.Limit")

	require.NoError(t, db.Close())
	require.NoError(t, db.Close(), "idempotent")
	assert.ErrorIs(t, db.Set([]byte("k"), nil), ErrClosed)
	assert.ErrorIs(t, db.Delete([]byte("k")), ErrClosed)
	assert.ErrorIs(t, db.Apply(db.NewBatch()), ErrClosed, "even an empty batch")
	b = db.NewBatch()
	b.Set([]byte("k"), nil)
	assert.ErrorIs(t, db.Apply(b), ErrClosed)
	assert.ErrorIs(t, db.Flush(), ErrClosed)
	_, err = db.Get(ctx, []byte("k"))
	assert.ErrorIs(t, err, ErrClosed)
	it = db.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), ErrClosed)
	_, err = db.Coprocessor(ctx, &coproc.Request{})
	assert.ErrorIs(t, err, ErrClosed)
	_, err = db.Coprocessor(ctx, nil)
	assert.ErrorIs(t, err, ErrClosed, "closed comes before a bad request")
	assert.True(t, db.Stats().Closed)
}

func TestOpen_Errors(t *testing.T) {
	_, err := Open("", &Options{InMemory: true, Scheduler: "lottery"})
	assert.ErrorContains(t, err, `unknown scheduler "lottery"`)
	_, err = Open("", &Options{InMemory: true, ResourceControl: true, Scheduler: SchedulerFIFO})
	assert.ErrorContains(t, err, "resource control schedules with the \"priority\" scheduler")
	_, err = Open("", &Options{InMemory: true, Workers: -1, MaxTasks: -1, TimeSlice: -1, CacheSize: -1})
	require.Error(t, err)
	for _, f := range []string{"Workers", "MaxTasks", "TimeSlice", "CacheSize"} {
		assert.ErrorContains(t, err, f, "every problem is reported")
	}
	_, err = Open("", nil)
	assert.Error(t, err, "an on-disk store needs a directory")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	_, err = Open(file, nil)
	assert.ErrorContains(t, err, "not a directory")

	corrupt := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(corrupt, "CURRENT"), []byte("MANIFEST-999999\n"), 0o644))
	_, err = Open(corrupt, nil)
	assert.ErrorContains(t, err, "kv: open")
}

func TestOpen_CreatesMissingDirectoryAndPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	db, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v")))
	require.NoError(t, db.Close())
	db = openTest(t, dir, nil)
	v, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "v", string(v))
	o := db.Options()
	assert.EqualValues(t, defaultCacheSize(processMemory()), o.CacheSize)
	assert.EqualValues(t, 32<<20, o.RowCacheSize)
	assert.Equal(t, SchedulerMLFQ, o.Scheduler)
}

type recordHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, r.Message)
	return nil
}
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordHandler) WithGroup(string) slog.Handler      { return h }

func TestOpen_PebbleLogsGoToLogger(t *testing.T) {
	h := &recordHandler{}
	db, err := Open(t.TempDir(), &Options{Logger: slog.New(h)})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v")))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	h.mu.Lock()
	defer h.mu.Unlock()
	assert.NotEmpty(t, h.msgs, "Pebble's log lines reach the store's logger")
}

func TestPriority_PinsMLFQLevel(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, Workers: 1})
	load(t, db, 5000, func(int) []byte { return []byte("v") })
	for _, c := range []struct {
		p     resource.Priority
		level int
	}{{resource.PriorityLow, 2}, {resource.PriorityHigh, 0}} {
		before := db.Stats().Pool.Queue.Levels[c.level].Steps
		it := db.Scan(WithPriority(context.Background(), c.p), nil, nil, nil)
		for it.Next() {
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		assert.Greater(t, db.Stats().Pool.Queue.Levels[c.level].Steps, before, "priority %v runs on level %d", c.p, c.level)
	}
	o, err := spawnOptions(WithTaskID(context.Background(), 42), nil)
	require.NoError(t, err)
	assert.EqualValues(t, 42, o.TaskID)
	assert.False(t, o.Fixed)
}

func TestStats_JSON(t *testing.T) {
	db := openTest(t, t.TempDir(), nil)
	load(t, db, 1000, func(int) []byte { return []byte("v") })
	require.NoError(t, db.Flush())
	for i := range 3 {
		_, err := db.Get(context.Background(), keyN(5))
		require.NoError(t, err)
		if i == 0 {
			db.cache.c.Wait() // ristretto applies inserts asynchronously
		}
	}
	st := db.Stats()
	assert.EqualValues(t, 2, st.RowCache.Hits)
	assert.EqualValues(t, 1, st.RowCache.Misses)
	assert.Zero(t, st.RowCache.HeldBack, "a key written is cached from its first read")
	assert.Positive(t, st.Storage.DiskBytes)
	var tables int64
	for _, l := range st.Storage.Levels {
		tables += l.Tables
	}
	assert.Positive(t, tables, "the flush wrote a table")
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.True(t, bytes.Contains(b, []byte(`"row_cache"`)))
	assert.True(t, bytes.Contains(b, []byte(`"pool"`)))
}

// TestScan_RecycledBatchesUnderConcurrentScans: finished scans give their
// batches back for others to reuse. Each pair is checked against its key
// before the next Next, and each scan against the rows it should have
// read, so a batch reused while its reader still holds it shows.
func TestScan_RecycledBatchesUnderConcurrentScans(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true, Workers: 2})
	const n = 3000
	value := func(key []byte) []byte { return append([]byte("val-"), key...) }
	load(t, db, n, func(i int) []byte { return value(keyN(i)) })
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for round := range 60 {
				o := &ScanOptions{Reverse: (g+round)%2 == 0}
				want := n
				if round%3 == 0 {
					o.Limit = 1 + round*7
					want = o.Limit
				}
				stopAt := -1 // some readers close early
				if round%5 == 1 {
					stopAt = 700
					want = min(want, stopAt)
				}
				it := db.Scan(context.Background(), nil, nil, o)
				rows := 0
				for it.Next() {
					if k, v := it.Key(), it.Value(); !bytes.Equal(v, value(k)) {
						assert.Failf(t, "a pair from another row", "%q = %q", k, v)
						break
					}
					if rows++; rows == stopAt {
						break
					}
				}
				assert.NoError(t, it.Err())
				assert.NoError(t, it.Close())
				assert.Equal(t, want, rows)
			}
		})
	}
	wg.Wait()
}

// TestOptions_WithDefaults: the zero fields take Open's defaults, the set
// ones stay, and Schedulers lists what validate accepts.
func TestOptions_WithDefaults(t *testing.T) {
	d := Options{}.WithDefaults()
	assert.Equal(t, time.Millisecond, d.TimeSlice)
	assert.Equal(t, int64(32<<20), d.RowCacheSize)
	assert.Equal(t, int64(64<<20), d.MaxTxnBytes)
	assert.Equal(t, SchedulerMLFQ, d.Scheduler)
	assert.Equal(t, 7*time.Millisecond, Options{TimeSlice: 7 * time.Millisecond}.WithDefaults().TimeSlice)
	for _, s := range Schedulers() {
		o := Options{Scheduler: s}
		assert.NoError(t, o.validate(), "%s", s)
	}
	assert.Equal(t, SchedulerMLFQ, Schedulers()[0], "the default first")
}

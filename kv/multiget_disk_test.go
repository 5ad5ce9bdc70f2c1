package kv

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv/internal/diskfs"
)

var multiGetSeed = flag.Uint64("multiget.seed", 0, "seed of TestMultiGet_SplitEqualsOneTask (0 = from the clock); a failing run logs its seed")

func TestMultiGetParts(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []int
	}{
		{n: 0},
		{n: 1},
		{n: 7}, // a second part would read 3 keys
		{n: 8, want: []int{0, 4, 8}},
		{n: 9, want: []int{0, 4, 9}},
		{n: 15, want: []int{0, 5, 10, 15}},
		{n: 16, want: []int{0, 4, 8, 12, 16}},
		{n: 64, want: []int{0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64}},
		{n: 100, want: []int{0, 6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93, 100}},
		{n: 1000, want: []int{0, 62, 125, 187, 250, 312, 375, 437, 500, 562, 625, 687, 750, 812, 875, 937, 1000}},
	} {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			assert.Equal(t, c.want, multiGetParts(c.n))
		})
	}
}

// Every split covers the keys once, in parts of minPartKeys or more that
// differ by one key at most, never more than maxParts of them.
func TestMultiGetParts_Bounds(t *testing.T) {
	for n := range 5000 {
		b := multiGetParts(n)
		if b == nil {
			require.Less(t, n, 2*minPartKeys, "n=%d", n)
			continue
		}
		k := len(b) - 1
		require.Equal(t, 0, b[0], "n=%d", n)
		require.Equal(t, n, b[k], "n=%d", n)
		require.LessOrEqual(t, k, maxParts, "n=%d", n)
		lo, hi := n, 0
		for i := range k {
			size := b[i+1] - b[i]
			lo, hi = min(lo, size), max(hi, size)
		}
		require.GreaterOrEqual(t, lo, minPartKeys, "n=%d", n)
		require.LessOrEqual(t, hi-lo, 1, "n=%d", n)
	}
}

// A split MultiGet returns what one task returns, on the store and on a
// snapshot: keys in any order, repeated, missing, overwritten, deleted,
// in tables and in the memtable.
func TestMultiGet_SplitEqualsOneTask(t *testing.T) {
	seed := *multiGetSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (-multiget.seed to replay)", seed)
	forEachScheduler(t, func(t *testing.T, db *DB) {
		r := rand.New(rand.NewPCG(seed, 29))
		ctx := context.Background()
		const n = 2000
		load(t, db, n, func(i int) []byte { return fmt.Appendf(nil, "v%d", i) })
		require.NoError(t, db.Flush())
		b := db.NewBatch()
		for range 300 {
			i := r.IntN(n)
			switch r.IntN(3) {
			case 0:
				b.Delete(keyN(i))
			case 1:
				b.Set(keyN(i), []byte{}) // present, empty
			default:
				b.Set(keyN(i), fmt.Appendf(nil, "w%d", i))
			}
		}
		require.NoError(t, db.Apply(b)) // in the memtable, over the tables
		snap, err := db.NewSnapshot(ctx)
		require.NoError(t, err)
		defer func() { require.NoError(t, snap.Close()) }()

		// read reads keys with the disk slow or not, and checks that a
		// slow disk split the MultiGet (a pool's only).
		read := func(get func(context.Context, [][]byte) ([][]byte, error), keys [][]byte, slow bool) [][]byte {
			t.Helper()
			avg := time.Duration(0)
			if slow {
				avg = time.Millisecond
			}
			db.reads.avg.Store(avg)
			var before int64
			if db.pool != nil {
				before = db.Stats().Pool.Spawned
			}
			vals, err := get(ctx, keys)
			require.NoError(t, err)
			if db.pool != nil {
				tasks := int64(1)
				if b := multiGetParts(len(keys)); slow && b != nil {
					tasks = int64(len(b) - 1)
				}
				assert.Equal(t, tasks, db.Stats().Pool.Spawned-before, "tasks spawned for %d keys", len(keys))
			}
			return vals
		}
		for round := range 40 {
			keys := make([][]byte, r.IntN(300))
			for i := range keys {
				switch {
				case i > 0 && r.IntN(5) == 0:
					keys[i] = keys[r.IntN(i)] // a repeat
				case r.IntN(8) == 0:
					keys[i] = keyN(n + r.IntN(100)) // never written
				default:
					keys[i] = keyN(r.IntN(n))
				}
			}
			for _, view := range []struct {
				name string
				get  func(context.Context, [][]byte) ([][]byte, error)
			}{{"store", db.MultiGet}, {"snapshot", snap.MultiGet}} {
				want := read(view.get, keys, false)
				got := read(view.get, keys, true)
				require.Equal(t, want, got, "round %d, %s, %d keys", round, view.name, len(keys))
				// Every slice is the caller's own, repeats included: no
				// two share an array.
				owner := map[*byte]int{}
				for i, v := range got {
					if cap(v) > 0 {
						p := &v[:1][0]
						j, shared := owner[p]
						require.False(t, shared, "round %d, %s: values %d and %d share an array", round, view.name, i, j)
						owner[p] = i
					}
				}
			}
		}
	})
}

// holdFS holds the reads of tables' first data block (offset 0) while
// armed, until release is closed, as a read from a slow disk blocks. Only
// that block: Pebble's background work reads a new table's index and
// properties (its table stats), never its data. It says on entered when
// one is held, without waiting for the test to count it. And it keeps the
// store's disk slow: a table read sets the reads' moving average to 1 ms
// before the store's own watch updates it, so that reads answered from
// memory (a table's footer and index, the blocks past the held one) do
// not make the disk fast halfway through a test.
type holdFS struct {
	vfs.FS
	reads   atomic.Pointer[diskReads] // the store's, once opened
	armed   atomic.Bool
	entered chan struct{} // buffered for every read a test holds
	release chan struct{}
}

func newHoldFS() *holdFS {
	return &holdFS{FS: vfs.NewMem(), entered: make(chan struct{}, 64), release: make(chan struct{})}
}

func (fs *holdFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !diskfs.IsTable(name) {
		return f, err
	}
	return &holdFile{File: f, fs: fs}, nil
}

type holdFile struct {
	vfs.File
	fs *holdFS
}

func (f *holdFile) ReadAt(p []byte, off int64) (int, error) {
	if r := f.fs.reads.Load(); r != nil {
		r.avg.Store(time.Millisecond)
	}
	if off == 0 && f.fs.armed.Load() {
		f.fs.entered <- struct{}{}
		<-f.fs.release
	}
	return f.File.ReadAt(p, off)
}

// tableKey is the j-th of the four keys of table i (openSlowDisk).
func tableKey(i, j int) []byte { return fmt.Appendf(nil, "t%02d-%d", i, j) }

// tableKeys returns the keys of tables from to to-1, in order: four a
// table, so that with minPartKeys at 4 and up to maxParts tables, a split
// MultiGet of them has one part per table.
func tableKeys(from, to int) [][]byte {
	var keys [][]byte
	for i := range to - from {
		for j := range 4 {
			keys = append(keys, tableKey(from+i, j))
		}
	}
	return keys
}

// openSlowDisk opens a store on fs, slow from the start, with tables
// tables of four keys each (tableKey, the value "old"), flushed one by
// one: tables that do not overlap, which Pebble leaves in one L0
// sublevel, uncompacted, so that a key's first read is the offset-0 read
// of its own table. o sets the pool; the slice of an hour puts the
// long-step monitor out of reach, so that only a read's word to the pool
// lets another step run beside it.
func openSlowDisk(t *testing.T, fs *holdFS, o Options, tables int) *DB {
	t.Helper()
	o.FS, o.RowCacheSize, o.spares, o.TimeSlice, o.NoWarm = fs, -1, -1, time.Hour, true
	db := openTest(t, "", &o)
	for i := range tables {
		for j := range 4 {
			require.NoError(t, db.Set(tableKey(i, j), []byte("old")))
		}
		require.NoError(t, db.Flush())
	}
	n := 0
	for _, level := range must(db.pdb.SSTables()) {
		n += len(level)
	}
	require.Equal(t, tables, n, "a table for each flush")
	db.reads.avg.Store(time.Millisecond)
	fs.reads.Store(db.reads)
	return db
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// openSnapshots is how many snapshots the store holds open.
func openSnapshots(db *DB) int {
	db.snapMu.Lock()
	defer db.snapMu.Unlock()
	return len(db.snapshots)
}

type multiGetResult struct {
	vals [][]byte
	err  error
}

func goMultiGet(ctx context.Context, get func(context.Context, [][]byte) ([][]byte, error), keys [][]byte) <-chan multiGetResult {
	ch := make(chan multiGetResult, 1)
	go func() {
		vals, err := get(ctx, keys)
		ch <- multiGetResult{vals, err}
	}()
	return ch
}

// On a slow disk a MultiGet's parts wait on the disk side by side: with
// one worker, its 16 parts are all held in a table read at once, each
// having given its slot away.
func TestMultiGet_SplitPartsReadSideBySide(t *testing.T) {
	fs := newHoldFS()
	db := openSlowDisk(t, fs, Options{Workers: 1}, maxParts)
	keys := tableKeys(0, maxParts)
	require.Len(t, multiGetParts(len(keys)), maxParts+1, "a part for each table")

	fs.armed.Store(true)
	res := goMultiGet(context.Background(), db.MultiGet, keys)
	for i := range maxParts {
		within(t, fs.entered, fmt.Sprintf("part %d's table read, beside %d held", i, i))
	}
	st := db.Stats().Pool
	assert.Equal(t, 1, st.Workers)
	assert.EqualValues(t, maxParts, st.Blocked, "every part told the pool")

	fs.armed.Store(false)
	close(fs.release)
	r := within(t, res, "the MultiGet, released")
	require.NoError(t, r.err)
	require.Len(t, r.vals, len(keys))
	for i, v := range r.vals {
		assert.Equal(t, "old", string(v), "key %s", keys[i])
	}
	assert.Zero(t, openSnapshots(db), "the MultiGet's snapshot is closed")
}

// The parts of a split MultiGet read one view: a write that completes
// after the MultiGet began, before a part has opened its iterator, is
// seen by no part. One step at a time (MaxWorkers 1): while the first
// part is held in its read, the second waits in the queue, its iterator
// not yet opened, and the keys of both are overwritten.
func TestMultiGet_SplitReadsOneView(t *testing.T) {
	for _, onSnapshot := range []bool{false, true} {
		t.Run(map[bool]string{false: "store", true: "snapshot"}[onSnapshot], func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				fs := newHoldFS()
				db := openSlowDisk(t, fs, Options{Workers: 1, MaxWorkers: 1}, 2)
				keys := tableKeys(0, 2)
				get := db.MultiGet
				if onSnapshot {
					snap, err := db.NewSnapshot(context.Background())
					require.NoError(t, err)
					t.Cleanup(func() { require.NoError(t, snap.Close()) })
					get = snap.MultiGet
				}

				// Cleanups run last first: the held read is let go before the
				// store closes, even when a check below fails.
				var release sync.Once
				let := func() { fs.armed.Store(false); release.Do(func() { close(fs.release) }) }
				t.Cleanup(let)

				fs.armed.Store(true)
				res := goMultiGet(context.Background(), get, keys)
				within(t, fs.entered, "the first part's table read")
				// The caller spawns the second part after the first, which the
				// worker may have taken into its read already: once every
				// goroutine is blocked, the second part is queued.
				synctest.Wait()
				for _, k := range keys {
					require.NoError(t, db.Set(k, []byte("new")))
				}
				st := db.Stats().Pool
				require.Equal(t, 1, st.Queued, "the second part had not begun when the keys were overwritten")
				require.Equal(t, 1, st.Running)

				let()
				r := within(t, res, "the MultiGet, released")
				require.NoError(t, r.err)
				for i, v := range r.vals {
					assert.Equal(t, "old", string(v), "key %s", keys[i])
				}
				got, err := db.MultiGet(context.Background(), keys)
				require.NoError(t, err)
				for i, v := range got {
					assert.Equal(t, "new", string(v), "key %s, read afterwards", keys[i])
				}
			})
		})
	}
}

// A part refused by a full pool fails the MultiGet with ErrBusy, and the
// part spawned before it ends: no task, iterator or snapshot is left
// (Close would report a leaked iterator or snapshot, goleak a goroutine).
// A Get with a task id (never inline, so counted among the running) holds
// the only step in a table read: the first part waits in the queue, and
// the second finds MaxTasks, 2, reached.
func TestMultiGet_SplitBusy(t *testing.T) {
	fs := newHoldFS()
	db := openSlowDisk(t, fs, Options{Workers: 1, MaxWorkers: 1, MaxTasks: 2}, 3)

	fs.armed.Store(true)
	held := make(chan error, 1)
	go func() {
		_, err := db.Get(WithTaskID(context.Background(), 1), tableKey(0, 0))
		held <- err
	}()
	within(t, fs.entered, "the Get's table read")
	before := db.Stats().Pool

	_, err := db.MultiGet(context.Background(), tableKeys(1, 3))
	require.ErrorIs(t, err, ErrBusy)
	after := db.Stats().Pool
	assert.Equal(t, before.RejectedBusy+1, after.RejectedBusy, "the second part was refused")
	assert.Equal(t, before.Dropped+1, after.Dropped, "the first part was ended in the queue")
	assert.Zero(t, after.Queued)
	assert.Zero(t, openSnapshots(db), "the MultiGet's snapshot is closed")

	fs.armed.Store(false)
	close(fs.release)
	require.NoError(t, within(t, held, "the Get, released"))
}

// A split MultiGet whose context is cancelled while its parts run returns
// the context's error: the parts still queued end at once, the one held
// in its read at its end, and nothing is left.
func TestMultiGet_SplitCancelled(t *testing.T) {
	fs := newHoldFS()
	db := openSlowDisk(t, fs, Options{Workers: 1, MaxWorkers: 1}, 3)

	fs.armed.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := goMultiGet(ctx, db.MultiGet, tableKeys(0, 3))
	within(t, fs.entered, "the first part's table read")
	cancel()

	fs.armed.Store(false)
	close(fs.release)
	r := within(t, res, "the MultiGet, cancelled and released")
	require.ErrorIs(t, r.err, context.Canceled)
	assert.Nil(t, r.vals)
	assert.Zero(t, db.Stats().Pool.Queued)
	assert.Zero(t, openSnapshots(db), "the MultiGet's snapshot is closed")
}

// A split MultiGet under way when the store closes returns ErrClosed —
// or its values, if its parts all ran before the pool closed — and Close
// reports nothing leaked: the pool ends the parts, then the store closes
// the MultiGet's snapshot if the MultiGet has not yet.
func TestMultiGet_SplitClosed(t *testing.T) {
	fs := newHoldFS()
	db := openSlowDisk(t, fs, Options{Workers: 1, MaxWorkers: 1}, 3)
	keys := tableKeys(0, 3)

	fs.armed.Store(true)
	res := goMultiGet(context.Background(), db.MultiGet, keys)
	within(t, fs.entered, "the first part's table read")
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()

	fs.armed.Store(false)
	close(fs.release)
	require.NoError(t, within(t, closed, "Close, released"))
	r := within(t, res, "the MultiGet")
	if r.err != nil {
		require.ErrorIs(t, r.err, ErrClosed)
		return
	}
	for i, v := range r.vals {
		assert.Equal(t, "old", string(v), "key %s", keys[i])
	}
}

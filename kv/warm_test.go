package kv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWarmPolicy(t *testing.T) {
	p := newWarmPolicy(64 << 20) // headroom 4 MiB
	require.EqualValues(t, 4<<20, p.headroom)
	assert.EqualValues(t, 1<<20, newWarmPolicy(1<<20).headroom, "at least 1 MiB")
	const mib = 1 << 20
	for _, c := range []struct {
		name string
		s    warmState
		want warmVerdict
	}{
		{"an empty cache", warmState{capacity: 64 * mib, sinceWrite: time.Hour}, warmGo},
		{"room for the batch and the headroom", warmState{capacity: 64 * mib, used: 27 * mib, reserved: 32 * mib, sinceWrite: warmQuiet}, warmGo},
		{"a flush or compaction ended within the quiet", warmState{capacity: 64 * mib, sinceWrite: warmQuiet - 1}, warmWriting},
		{"a compaction running before the quiet", warmState{capacity: 64 * mib, compacting: 1}, warmCompacting},
		{"the batch would eat the headroom", warmState{capacity: 64 * mib, used: 28 * mib, reserved: 32 * mib}, warmCacheFull},
		{"memtables count against the room", warmState{capacity: 64 * mib, used: 0, reserved: 60 * mib}, warmCacheFull},
		{"a slow disk first", warmState{capacity: 64 * mib, used: 64 * mib, diskSlow: true, compacting: 1}, warmDiskSlow},
		{"a compaction running", warmState{capacity: 64 * mib, compacting: 1}, warmCompacting},
		{"a full cache before a compaction", warmState{capacity: 64 * mib, used: 63 * mib, compacting: 1}, warmCacheFull},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, p.decide(c.s, mib), c.want.String())
		})
	}
}

func TestWarmRest(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name         string
		others, span time.Duration
		procs        int
		want         time.Duration
	}{
		{"an idle process: back to back", 0, 10 * ms, 2, 0},
		{"half the CPU of two: not yet busy", 10 * ms, 10 * ms, 2, 0},
		{"past half: a rest", 11 * ms, 10 * ms, 2, warmRestBusy},
		{"one CPU, past half", 6 * ms, 10 * ms, 1, warmRestBusy},
		{"one CPU, below half", 4 * ms, 10 * ms, 1, 0},
		{"no window yet", 20 * ms, 0, 2, 0},
	} {
		assert.Equal(t, c.want, warmRest(c.others, c.span, c.procs), c.name)
	}
}

func TestWarmDense(t *testing.T) {
	assert.True(t, warmDense(100, 100), "a table alone in its span")
	assert.True(t, warmDense(25, 100), "a quarter of it")
	assert.False(t, warmDense(24, 100), "less")
	assert.False(t, warmDense(64<<20, 1100<<20), "a flush of hashed keys over a 1.1 GB store")
	assert.True(t, warmDense(0, 0), "an empty span costs nothing")
}

// TestWarm_SparseFlushLeftCold: a flush of a few keys spread over a store
// already warm writes a table whose span is the whole store; the warmer
// leaves it cold rather than read the store again.
func TestWarm_SparseFlushLeftCold(t *testing.T) {
	db, _ := warmOpen(t, Options{RowCacheSize: -1, CacheSize: 256 << 20})
	writeKeys(t, db, 3000, 100)
	require.NoError(t, db.Flush())
	// Down to the bottom level, so that the sparse flush below is the only
	// table in L0 and starts no compaction: a compaction's output is a
	// new table of the whole span, which warming reads, rightly.
	require.NoError(t, db.pdb.Compact(context.Background(), []byte("k"), []byte("l"), false))
	waitWarm(t, db, func(w WarmStats) bool { return w.Keys >= 3000 })
	keys := db.Stats().Warm.Keys

	require.NoError(t, db.Set([]byte("k000000"), []byte("new")))
	require.NoError(t, db.Set([]byte("k002999"), []byte("new")))
	require.NoError(t, db.Flush())
	waitWarm(t, db, func(w WarmStats) bool { return w.SpansSparse == 1 })
	assert.Equal(t, keys, db.Stats().Warm.Keys, "the store was not read again")
}

func TestCompactedTables_LeavesMovedTablesOut(t *testing.T) {
	info := pebble.CompactionInfo{
		Input:  []pebble.LevelInfo{{Level: 5, Tables: []pebble.TableInfo{{FileNum: 7}}}, {Level: 6, Tables: []pebble.TableInfo{{FileNum: 3}}}},
		Output: pebble.LevelInfo{Level: 6, Tables: []pebble.TableInfo{{FileNum: 7}, {FileNum: 9}}},
	}
	got := compactedTables(info)
	require.Len(t, got, 1, "table 7 moved down as it was: its blocks are cached under its number")
	assert.EqualValues(t, 9, got[0].FileNum)
}

// waitWarm waits until warming has nothing queued, no task running, and
// its figures satisfy ok.
func waitWarm(t *testing.T, db *DB, ok func(WarmStats) bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		w := db.Stats().Warm
		return w.PendingSpans == 0 && !w.Running && ok(w)
	}, 10*time.Second, time.Millisecond, "%+v", db.Stats().Warm)
}

func TestWarmSpans(t *testing.T) {
	show := func(w *warmSpans) []string {
		var out []string
		for _, s := range w.spans {
			out = append(out, fmt.Sprintf("%s-%s:%d", s.lo, s.hi, s.bytes))
		}
		return out
	}
	w := warmSpans{limit: 4}
	w.add([]byte("m"), []byte("p"), 1)
	w.add([]byte("a"), []byte("c"), 2)
	w.add([]byte("x"), []byte("z"), 4)
	assert.Equal(t, []string{"a-c:2", "m-p:1", "x-z:4"}, show(&w), "disjoint spans in key order")
	w.add([]byte("o"), []byte("y"), 8)
	assert.Equal(t, []string{"a-c:2", "m-z:13"}, show(&w), "a span over two merges them")
	w.add([]byte("c"), []byte("c"), 16)
	assert.Equal(t, []string{"a-c:18", "m-z:13"}, show(&w), "a span that touches an end merges")
	w.add([]byte("e"), []byte("f"), 1)
	w.add([]byte("h"), []byte("i"), 1)
	w.add([]byte("j"), []byte("k"), 1)
	assert.Equal(t, []string{"a-f:19", "h-i:1", "j-k:1", "m-z:13"}, show(&w), "past the limit the first two merge")
	assert.EqualValues(t, 34, w.bytes())

	lo := []byte("q")
	w.add(lo, []byte("r"), 0)
	lo[0] = 'A'
	s, ok := w.take()
	require.True(t, ok)
	assert.Equal(t, "a", string(s.lo), "spans are copies")
	for w.len() > 0 {
		w.take()
	}
	_, ok = w.take()
	assert.False(t, ok)
}

// warmOpen opens a store whose warmer reports each end of its turn on the
// returned channel.
func warmOpen(t *testing.T, o Options) (*DB, <-chan warmVerdict) {
	t.Helper()
	ended := make(chan warmVerdict, 1024)
	h := warmHooks{turnEnded: func(v warmVerdict) {
		select {
		case ended <- v:
		default:
		}
	}}
	if o.warmHooks != nil {
		h.beforeCheck, h.beforeRowCheck = o.warmHooks.beforeCheck, o.warmHooks.beforeRowCheck
	}
	o.warmHooks = &h
	if o.FS == nil {
		o.InMemory = true
	}
	if o.slowRead == 0 {
		o.slowRead = time.Hour // under the race detector memory reads slowly
	}
	return openTest(t, "", &o), ended
}

// waitTurn waits for the warmer to stop with want.
func waitTurn(t *testing.T, db *DB, ended <-chan warmVerdict, want warmVerdict) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case v := <-ended:
			if v == want {
				return
			}
		case <-deadline:
			require.FailNow(t, "the warmer never stopped with "+want.String(), "%+v cache %d compacting %d", db.Stats().Warm, db.warm.cache.Size(), db.warm.compacting.Load())
		}
	}
}

func writeKeys(t *testing.T, db *DB, n, size int) {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]byte, size)
	b := db.NewBatch()
	for i := range n {
		for j := range v {
			v[j] = byte(r.Uint32()) // incompressible, so a key costs its size
		}
		b.Set(fmt.Appendf(nil, "k%06d", i), v)
		if len(b.ops) == 1000 {
			require.NoError(t, db.Apply(b))
			b.Reset()
		}
	}
	require.NoError(t, db.Apply(b))
}

// TestWarm_FlushedTableIsCached: after a flush, the warmer reads the new
// table into the block cache, so Gets of every key miss no block; with
// warming off, they do.
func TestWarm_FlushedTableIsCached(t *testing.T) {
	const n = 3000
	for _, warm := range []bool{true, false} {
		t.Run(fmt.Sprintf("warm=%v", warm), func(t *testing.T) {
			db, ended := warmOpen(t, Options{RowCacheSize: -1, CacheSize: 256 << 20, NoWarm: !warm})
			writeKeys(t, db, n, 100)
			require.NoError(t, db.Flush())
			if !warm {
				assert.False(t, db.Stats().Warm.Enabled)
			} else {
				waitTurn(t, db, ended, warmGo)
				st := db.Stats().Warm
				assert.True(t, st.Enabled)
				assert.EqualValues(t, n, st.Keys)
				assert.Positive(t, st.BlockBytes)
				assert.EqualValues(t, 1, st.SpansWarmed)
				assert.Zero(t, st.PendingSpans)
			}
			before := db.Stats().Storage.BlockCacheMisses
			for i := range n {
				_, err := db.Get(context.Background(), fmt.Appendf(nil, "k%06d", i))
				require.NoError(t, err)
			}
			misses := db.Stats().Storage.BlockCacheMisses - before
			if warm {
				assert.Zero(t, misses, "every block of the flushed table was cached")
			} else {
				assert.Positive(t, misses)
			}
		})
	}
}

// TestWarm_StandsDownWhenTheCacheIsFull: the warmer stops short of the
// cache's capacity, less the memtables' reservation and its headroom.
func TestWarm_StandsDownWhenTheCacheIsFull(t *testing.T) {
	const capacity = 64 << 20 // 8 MiB memtables, four reserved: 32 MiB
	db, ended := warmOpen(t, Options{RowCacheSize: -1, CacheSize: capacity})
	writeKeys(t, db, 40000, 1000) // 40 MB, flushed as the memtables fill
	require.NoError(t, db.Flush())
	waitTurn(t, db, ended, warmCacheFull)
	w := db.warm
	used := w.cache.Size()
	assert.LessOrEqual(t, used+w.reserved+w.policy.headroom, int64(capacity)+warmBatchBytes,
		"warming stopped within a batch of the headroom")
	st := db.Stats().Warm
	assert.Positive(t, st.StoodDown["cache full"])
	assert.Positive(t, st.PendingSpans, "what did not fit is left for later")
}

// TestWarm_StandsDownOnASlowDisk: while the table reads are slow, the
// warmer reads nothing.
func TestWarm_StandsDownOnASlowDisk(t *testing.T) {
	db, ended := warmOpen(t, Options{RowCacheSize: -1, CacheSize: 256 << 20})
	db.reads.avg.Store(2 * time.Hour)
	writeKeys(t, db, 1000, 100)
	require.NoError(t, db.Flush())
	waitTurn(t, db, ended, warmDiskSlow)
	st := db.Stats().Warm
	assert.Zero(t, st.Keys)
	assert.Zero(t, st.BlockBytes)
	assert.Equal(t, 1, st.PendingSpans)
	assert.Equal(t, "disk slow", st.Last)

	db.reads.avg.Store(0) // the disk is fast again: the next flush warms both
	require.NoError(t, db.Set([]byte("k999999"), []byte("x")))
	require.NoError(t, db.Flush())
	waitTurn(t, db, ended, warmGo)
	assert.EqualValues(t, 1001, db.Stats().Warm.Keys)
}

// TestWarm_YieldsToAGet: on a store of one worker, a Get queued while the
// warmer steps runs after at most one more batch of the warmer's, not
// after the span: the warmer's step yields to it (a slice of an hour
// leaves only the Get's preemption to end the step).
func TestWarm_YieldsToAGet(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		hold, entered, release := holdFirst()
		hooks := &warmHooks{beforeCheck: hold}
		db, ended := warmOpen(t, Options{RowCacheSize: -1, CacheSize: 256 << 20, Workers: 1, spares: -1, TimeSlice: time.Hour, warmHooks: hooks})
		var atGet int64 = -1
		db.hooks.beforeRead = func([]byte) { atGet = db.warm.stats.keys.Load() }
		writeKeys(t, db, 4000, 100)
		go func() { _ = db.Flush() }()
		<-entered
		require.NoError(t, getBesideWarmer(db, "k000007", release))
		waitTurn(t, db, ended, warmGo)
		assert.Positive(t, atGet)
		assert.LessOrEqual(t, atGet, int64(2*warmCheckEvery), "the warmer yielded at its next check")
		st := db.Stats().Warm
		assert.EqualValues(t, 4000, st.Keys, "and went on after the Get")
	})
}

// holdFirst returns a hook that, the first time it is called, closes
// entered and waits until release is closed.
func holdFirst() (hook func(), entered, release chan struct{}) {
	entered, release = make(chan struct{}), make(chan struct{})
	first := true
	return func() {
		if first {
			first = false
			close(entered)
			<-release
		}
	}, entered, release
}

// getBesideWarmer starts a Get of key while the warmer's step is held, waits
// until it is queued behind that step (in a synctest bubble), lets the step
// go on, and returns the Get's error.
func getBesideWarmer(db *DB, key string, release chan struct{}) error {
	got := make(chan error, 1)
	go func() {
		_, err := db.Get(context.Background(), []byte(key))
		got <- err
	}()
	synctest.Wait()
	close(release)
	return <-got
}

// TestWarm_RowRestoreYieldsToAGet: reading the row cache's saved keys back
// after Open, the warmer's task yields to a queued Get at its next look at
// the pool and keeps the rest of its batch: it is still the one task
// running, so a kick meanwhile starts no other, and it reads every key.
func TestWarm_RowRestoreYieldsToAGet(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		fs := vfs.NewMem()
		o := Options{FS: fs, CacheSize: 256 << 20, Workers: 1, spares: -1, TimeSlice: time.Hour}
		db, _ := warmOpen(t, o)
		writeKeys(t, db, 100, 100) // written keys are cached from their first read
		for i := range 100 {
			_, err := db.Get(context.Background(), fmt.Appendf(nil, "k%06d", i))
			require.NoError(t, err)
		}
		db.cache.c.Wait()
		require.NoError(t, db.Close())

		hold, entered, release := holdFirst()
		o.warmHooks = &warmHooks{beforeRowCheck: hold}
		db, _ = warmOpen(t, o)
		<-entered
		var atGet int64 = -1
		db.hooks.beforeRead = func([]byte) {
			atGet = db.warm.stats.rowsRead.Load()
			db.warm.kick() // the task yielded: it must still count as running
		}
		require.ErrorIs(t, getBesideWarmer(db, "no such key", release), ErrNotFound)
		waitWarm(t, db, func(w WarmStats) bool { return w.RowsRead == 100 })
		assert.EqualValues(t, 1, atGet, "the warmer yielded at its next look at the pool")
		st := db.Stats().Warm
		assert.EqualValues(t, 100, st.RowsCached)
		assert.EqualValues(t, 1, st.Runs, "one task, yielded and resumed")
	})
}

// TestWarm_CloseDoesNotWaitForWarming: Close ends the warmer's task at the
// end of its step, with the span unfinished, and leaves no goroutine.
func TestWarm_CloseDoesNotWaitForWarming(t *testing.T) {
	closed := make(chan error, 1)
	var db *DB
	first := true
	hooks := &warmHooks{beforeCheck: func() {
		if first {
			first = false
			go func() { closed <- db.Close() }()
			for !db.closing.Load() {
				runtime.Gosched() // until Close has begun; then the step goes on
			}
		}
	}}
	db, err := Open("", &Options{InMemory: true, RowCacheSize: -1, CacheSize: 256 << 20, warmHooks: hooks})
	require.NoError(t, err)
	writeKeys(t, db, 20000, 100)
	require.NoError(t, db.Flush())
	require.NoError(t, within(t, closed, "Close"))
	st := db.Stats().Warm
	assert.Less(t, st.Keys, int64(20000), "the span was left unfinished")
	assert.Zero(t, st.SpansWarmed)
}

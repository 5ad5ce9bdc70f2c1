package kv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schedulerOptions are the store's configurations a read must behave alike
// on.
var schedulerOptions = []struct {
	name string
	opts Options
}{
	{"mlfq", Options{Scheduler: SchedulerMLFQ}},
	{"fifo", Options{Scheduler: SchedulerFIFO}},
	{"steal", Options{Scheduler: SchedulerWorkStealing}},
	{"direct", Options{Scheduler: SchedulerDirect}},
	{"resource-control", Options{ResourceControl: true}},
	{"no-row-cache", Options{RowCacheSize: -1}},
}

// forEachScheduler runs f on a fresh in-memory store of each of
// schedulerOptions, as a subtest.
func forEachScheduler(t *testing.T, f func(t *testing.T, db *DB)) {
	for _, c := range schedulerOptions {
		t.Run(c.name, func(t *testing.T) {
			o := c.opts
			// No warming: its task, spawned a second after a flush, would
			// count among the tasks the tests count.
			o.InMemory, o.NoSync, o.NoWarm = true, true, true
			f(t, openTest(t, "", &o))
		})
	}
}

func TestMultiGet_Semantics(t *testing.T) {
	forEachScheduler(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		require.NoError(t, db.Set([]byte("a"), []byte("1")))
		require.NoError(t, db.Set([]byte("empty"), []byte{}))
		require.NoError(t, db.Set([]byte{0x00}, []byte("zero")))
		require.NoError(t, db.Set([]byte{0xff, 0x00}, []byte("ff")))
		_, err := db.Get(ctx, []byte("a")) // cached: MultiGet reads Pebble anyway
		require.NoError(t, err)

		keys := [][]byte{[]byte("missing"), []byte("a"), {0xff, 0x00}, []byte("empty"), []byte("a"), {0x00}, []byte("b")}
		vals, err := db.MultiGet(ctx, keys)
		require.NoError(t, err)
		require.Len(t, vals, len(keys))
		assert.Nil(t, vals[0], "missing")
		assert.Equal(t, "1", string(vals[1]))
		assert.Equal(t, "ff", string(vals[2]))
		assert.NotNil(t, vals[3], "an empty value is a non-nil empty slice")
		assert.Empty(t, vals[3])
		assert.Equal(t, "1", string(vals[4]), "a repeated key")
		assert.Equal(t, "zero", string(vals[5]))
		assert.Nil(t, vals[6])

		// The caller owns every slice: changing one changes nothing else.
		vals[1][0] = 'X'
		assert.Equal(t, "1", string(vals[4]))
		got, err := db.Get(ctx, []byte("a"))
		require.NoError(t, err)
		assert.Equal(t, "1", string(got))

		none, err := db.MultiGet(ctx, nil)
		require.NoError(t, err)
		assert.NotNil(t, none)
		assert.Empty(t, none)

		_, err = db.MultiGet(ctx, [][]byte{[]byte("a"), {}})
		assert.ErrorIs(t, err, ErrEmptyKey)

		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = db.MultiGet(cctx, [][]byte{[]byte("a")})
		assert.ErrorIs(t, err, context.Canceled)

		require.NoError(t, db.Close())
		_, err = db.MultiGet(ctx, [][]byte{[]byte("a")})
		assert.ErrorIs(t, err, ErrClosed)
		_, err = db.MultiGet(ctx, [][]byte{{}})
		assert.ErrorIs(t, err, ErrClosed, "closed comes first")
	})
}

// A large MultiGet is one task that yields between keys, and reads every
// key right across its steps.
func TestMultiGet_LargeRequestYields(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true, TimeSlice: 20 * time.Microsecond})
	const n = 5000
	b := db.NewBatch()
	for i := range n {
		b.Set(keyN(i), fmt.Appendf(nil, "v%d", i))
	}
	require.NoError(t, db.Apply(b))
	keys := make([][]byte, n)
	perm := rand.Perm(n)
	for i, j := range perm {
		keys[i] = keyN(j)
	}
	before := db.Stats().Pool.Yields
	vals, err := db.MultiGet(context.Background(), keys)
	require.NoError(t, err)
	for i, j := range perm {
		require.Equal(t, fmt.Sprintf("v%d", j), string(vals[i]))
	}
	assert.Greater(t, db.Stats().Pool.Yields, before, "a 5,000-key MultiGet on a 20 µs slice yields")
}

// BenchmarkMultiGet reads 100 random keys of 200,000 per operation from 8
// goroutines: one MultiGet against a loop of 100 Gets, pooled and direct,
// with the row cache off so that both read Pebble.
//
//	go test -run '^$' -bench MultiGet -benchtime 2s ./kv/
func BenchmarkMultiGet(b *testing.B) {
	const n, batch = 200000, 100
	dir := b.TempDir()
	db, err := Open(dir, &Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	load(b, db, n, func(i int) []byte { return fmt.Appendf(nil, "value-%090d", i) })
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for _, sched := range []Scheduler{SchedulerMLFQ, SchedulerDirect} {
		for _, multi := range []bool{true, false} {
			name := fmt.Sprintf("%s/gets", sched)
			if multi {
				name = fmt.Sprintf("%s/multiget", sched)
			}
			b.Run(name, func(b *testing.B) {
				db := openTest(b, dir, &Options{Scheduler: sched, RowCacheSize: -1})
				warm(b, db, n)
				b.SetParallelism(4)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					r := rand.New(rand.NewPCG(rand.Uint64(), 3))
					ctx := context.Background()
					keys := make([][]byte, batch)
					for pb.Next() {
						for i := range keys {
							keys[i] = keyN(r.IntN(n))
						}
						if multi {
							if _, err := db.MultiGet(ctx, keys); err != nil {
								b.Error(err)
								return
							}
							continue
						}
						for _, k := range keys {
							if _, err := db.Get(ctx, k); err != nil {
								b.Error(err)
								return
							}
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "keys/s")
			})
		}
	}
}

// endingCtx is a context whose Err says Canceled from its calls-th call
// on: it ends while a read runs, at a moment the test picks, without a
// timer.
type endingCtx struct {
	context.Context
	calls, n atomic.Int64
}

func (c *endingCtx) Err() error {
	if c.n.Add(1) >= c.calls.Load() {
		return context.Canceled
	}
	return nil
}

// A MultiGet whose context ends while it runs returns the context's error
// at its next step (pooled) or within directCheckEvery keys (direct).
func TestMultiGet_DeadlineWhileRunning(t *testing.T) {
	for _, sched := range []Scheduler{SchedulerMLFQ, SchedulerDirect} {
		t.Run(string(sched), func(t *testing.T) {
			db := openTest(t, "", &Options{InMemory: true, NoSync: true, Scheduler: sched, TimeSlice: 20 * time.Microsecond})
			const n = 20000
			b := db.NewBatch()
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = keyN(i)
				b.Set(keys[i], []byte("v"))
			}
			require.NoError(t, db.Apply(b))
			ctx := &endingCtx{Context: context.Background()}
			ctx.calls.Store(2) // the call's own look passes; the next one ends it
			_, err := db.MultiGet(ctx, keys)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Less(t, ctx.n.Load(), int64(10), "it stopped at its first look after the start")
		})
	}
}

package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ prefix, end []byte }{
		{nil, nil},
		{[]byte{}, nil},
		{[]byte("a"), []byte("b")},
		{[]byte("user:"), []byte("user;")},
		{[]byte{0x01, 0xff}, []byte{0x02}},
		{[]byte{0x00, 0xff, 0xff}, []byte{0x01}},
		{[]byte{0xff, 0xff}, nil},
		{[]byte{0x61, 0x00}, []byte{0x61, 0x01}},
	} {
		before := append([]byte(nil), c.prefix...)
		assert.Equal(t, c.end, PrefixEnd(c.prefix), "PrefixEnd(%x)", c.prefix)
		assert.Equal(t, before, append([]byte(nil), c.prefix...), "the argument is unchanged")
	}

	// Every key with the prefix and none without, from a store.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	for _, k := range []string{"ab", "ab\x00", "ab\xff", "ab\xff\xff", "abc", "ac", "aa\xff", "b"} {
		require.NoError(t, db.Set([]byte(k), []byte("v")))
	}
	assert.Equal(t, []string{"ab", "ab\x00", "abc", "ab\xff", "ab\xff\xff"}, scanKeys(t, db, []byte("ab"), PrefixEnd([]byte("ab"))))
	assert.Equal(t, []string{"ab\xff", "ab\xff\xff"}, scanKeys(t, db, []byte("ab\xff"), PrefixEnd([]byte("ab\xff"))))
}

// scanKeys returns the keys of [start, end) in order.
func scanKeys(t *testing.T, db *DB, start, end []byte) []string {
	t.Helper()
	return iterKeys(t, db.Scan(context.Background(), start, end, &ScanOptions{KeysOnly: true}))
}

func TestWrite_ContextAndClose(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	b := db.NewBatch()
	b.Set([]byte("k"), []byte("v"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := db.Write(ctx, b)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = db.Get(context.Background(), []byte("k"))
	assert.ErrorIs(t, err, ErrNotFound, "a Write whose context was done wrote nothing")

	require.NoError(t, db.Write(context.Background(), b))
	got, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "v", string(got))

	require.NoError(t, db.Close())
	assert.ErrorIs(t, db.Write(context.Background(), b), ErrClosed)
	assert.ErrorIs(t, db.Write(ctx, b), ErrClosed, "closed comes first")
	assert.ErrorIs(t, db.DeleteRange(nil, nil), ErrClosed)
	assert.ErrorIs(t, db.DeleteRange([]byte("b"), []byte("a")), ErrClosed)
}

func TestDeleteRange_Bounds(t *testing.T) {
	all := []string{"a", "b", "b\x00", "c", "d", "e\xff"}
	for _, c := range []struct {
		name       string
		start, end []byte
		left       []string
	}{
		{"closed", []byte("b"), []byte("d"), []string{"a", "d", "e\xff"}},
		{"open start", nil, []byte("c"), []string{"c", "d", "e\xff"}},
		{"open end", []byte("b\x00"), nil, []string{"a", "b"}},
		{"both open", nil, nil, nil},
		{"empty range", []byte("b"), []byte("b"), all},
		{"past the last key", []byte("f"), nil, all},
		{"between keys", []byte("bb"), []byte("bc"), all},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, "", &Options{InMemory: true, NoSync: true})
			for _, k := range all {
				require.NoError(t, db.Set([]byte(k), []byte("v"+k)))
				_, err := db.Get(context.Background(), []byte(k)) // cached
				require.NoError(t, err)
			}
			require.NoError(t, db.DeleteRange(c.start, c.end))
			assert.Equal(t, c.left, scanKeys(t, db, nil, nil))
			for _, k := range all {
				v, err := db.Get(context.Background(), []byte(k))
				if slices.Contains(c.left, k) {
					assert.NoError(t, err, k)
					assert.Equal(t, "v"+k, string(v))
				} else {
					assert.ErrorIs(t, err, ErrNotFound, "%q was deleted, cached or not", k)
				}
			}
			// The store goes on taking writes in the range.
			require.NoError(t, db.Set([]byte("b"), []byte("again")))
			v, err := db.Get(context.Background(), []byte("b"))
			require.NoError(t, err)
			assert.Equal(t, "again", string(v))
		})
	}
}

func TestDeleteRange_InvalidRangeWritesNothing(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	require.NoError(t, db.Set([]byte("b"), []byte("v")))
	err := db.DeleteRange([]byte("c"), []byte("a"))
	assert.ErrorIs(t, err, ErrInvalidRange)
	assert.ErrorContains(t, err, `"c"`)

	b := db.NewBatch()
	b.Set([]byte("x"), []byte("1"))
	b.DeleteRange([]byte("c"), []byte("a"))
	b.Delete([]byte("b"))
	assert.ErrorIs(t, db.Apply(b), ErrInvalidRange)
	assert.Equal(t, []string{"b"}, scanKeys(t, db, nil, nil), "the batch wrote nothing")
	b.Reset()
	b.Set([]byte("x"), []byte("1"))
	require.NoError(t, db.Apply(b), "Reset clears the error")
}

func TestBatch_DeleteRangeInOrderWithTheBatchsWrites(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	for _, k := range []string{"a", "b", "c", "d"} {
		require.NoError(t, db.Set([]byte(k), []byte("old")))
		_, err := db.Get(context.Background(), []byte(k))
		require.NoError(t, err)
	}
	b := db.NewBatch()
	b.Set([]byte("b"), []byte("before")) // deleted by the range after it
	b.DeleteRange([]byte("a"), []byte("c"))
	b.Set([]byte("a"), []byte("after")) // survives: added after the range
	b.DeleteRange([]byte("d"), nil)
	require.Equal(t, 4, b.Len())
	require.NoError(t, db.Apply(b))
	assert.Equal(t, []string{"a", "c"}, scanKeys(t, db, nil, nil))
	for k, want := range map[string]string{"a": "after", "c": "old"} {
		v, err := db.Get(context.Background(), []byte(k))
		require.NoError(t, err)
		assert.Equal(t, want, string(v), k)
	}
	for _, k := range []string{"b", "d"} {
		_, err := db.Get(context.Background(), []byte(k))
		assert.ErrorIs(t, err, ErrNotFound, k)
	}
}

// A range deletion with an open end holds writes back until it commits:
// a key written past the last key it found would otherwise outlive it.
func TestDeleteRange_OpenEndHoldsWritesBack(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	require.NoError(t, db.Set([]byte("a"), []byte("v")))
	db.writeMu.RLock() // a write in flight
	done := make(chan error, 1)
	go func() { done <- db.DeleteRange([]byte("a"), nil) }()
	select {
	case err := <-done:
		t.Fatalf("the deletion did not wait for the write in flight: %v", err)
	default:
	}
	db.writeMu.RUnlock()
	require.NoError(t, <-done)
	assert.Empty(t, scanKeys(t, db, nil, nil))
}

// Writers raise each key's value; a deleter deletes every key now and then.
// A Get that starts after a DeleteRange returned never returns a value
// written before that DeleteRange started — cached or not — and never goes
// below a value a Get returned before it started, unless a deletion came
// between. A small cache keeps entries coming and going.
func TestGet_NoDeletedValueAfterDeleteRange(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true, Workers: 2, RowCacheSize: 1 << 16})
	const keys = 4
	key := func(i int) []byte { return fmt.Appendf(nil, "key%d", i) }
	var written, floor [keys]atomic.Int64 // floor: every value ≤ it is deleted
	var deletions atomic.Int64
	ctx := context.Background()

	var stop atomic.Bool
	var writers sync.WaitGroup
	for i := range keys {
		writers.Go(func() {
			for v := int64(1); !stop.Load(); v++ {
				if !assert.NoError(t, db.Set(key(i), strconv.AppendInt(nil, v, 10))) {
					return
				}
				written[i].Store(v)
			}
		})
	}
	// The deleter deletes until it has deleted a few dozen times with the
	// cache serving reads between its deletions — or a few thousand times
	// without (then the asserts below say what was missing), or the test
	// failed — and its end stops the others.
	deleter := make(chan struct{})
	go func() {
		defer close(deleter)
		for n := 0; !t.Failed(); n++ {
			if d := deletions.Load(); d >= 5000 || (d >= 30 && db.Stats().RowCache.Hits > 0) {
				return
			}
			var before [keys]int64
			for i := range keys {
				before[i] = written[i].Load()
			}
			var err error
			switch n % 3 {
			case 0:
				err = db.DeleteRange(nil, nil)
			case 1:
				err = db.DeleteRange([]byte("key"), PrefixEnd([]byte("key")))
			default:
				b := db.NewBatch()
				b.DeleteRange([]byte("key0"), nil)
				err = db.Apply(b)
			}
			if !assert.NoError(t, err) {
				return
			}
			deletions.Add(1)
			for i := range keys {
				for f := floor[i].Load(); before[i] > f && !floor[i].CompareAndSwap(f, before[i]); f = floor[i].Load() {
				}
			}
			// Range tombstones pile up in the memtable and every read
			// looks through them: a deletion every ~half millisecond.
			time.Sleep(500 * time.Microsecond)
		}
	}()
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for !stop.Load() {
				for i := range keys {
					f := floor[i].Load()
					v, err := db.Get(ctx, key(i))
					if errors.Is(err, ErrNotFound) {
						continue
					}
					if !assert.NoError(t, err) {
						return
					}
					n, err := strconv.ParseInt(string(v), 10, 64)
					require.NoError(t, err)
					if n <= f {
						assert.Failf(t, "a deleted value", "Get of key%d returned %d after a DeleteRange that started once %d was written had returned", i, n, f)
						return
					}
				}
			}
		})
	}
	<-deleter
	stop.Store(true)
	writers.Wait()
	readers.Wait()
	assert.Positive(t, deletions.Load())
	assert.Positive(t, db.Stats().RowCache.Hits, "the cache served reads between the deletions")
}

package kv

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/internal/valfmt"
)

// cached returns the row cache's value of key, if it has a current one.
func cached(db *DB, key string) (string, bool) {
	v, _, ok, _ := db.cache.lookup([]byte(key))
	return string(v), ok
}

// scanned returns key's value as Pebble has it: a Scan does not look in the
// row cache.
func scanned(t *testing.T, db *DB, key string) string {
	t.Helper()
	it := db.Scan(context.Background(), []byte(key), append([]byte(key), 0), nil)
	defer func() { require.NoError(t, it.Close()) }()
	require.True(t, it.Next(), "%s is stored", key)
	return string(it.Value())
}

func TestRowCache_AWriteRefreshesACachedKey(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	cacheKey(t, db, "k", "v1")

	require.NoError(t, db.Set([]byte("k"), []byte("v2")))
	v, ok := cached(db, "k")
	assert.True(t, ok, "a Set keeps a cached key cached")
	assert.Equal(t, "v2", v)

	b := db.NewBatch()
	b.Set([]byte("k"), []byte("v3"))
	require.NoError(t, db.Apply(b))
	v, ok = cached(db, "k")
	assert.True(t, ok, "so does a batch")
	assert.Equal(t, "v3", v)

	// Twice in one batch: the cache hears of the last write first and
	// keeps its value, then the first write finds the generation moved and
	// drops the key — never the first value.
	b.Reset()
	b.Set([]byte("k"), []byte("v4"))
	b.Set([]byte("k"), []byte("v5"))
	require.NoError(t, db.Apply(b))
	if v, ok := cached(db, "k"); ok {
		assert.Equal(t, "v5", v)
	}
	got, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "v5", string(got))

	require.NoError(t, db.Delete([]byte("k")))
	_, ok = cached(db, "k")
	assert.False(t, ok, "a delete drops the key")
	_, err = db.Get(context.Background(), []byte("k"))
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestRowCache_ABatchNeverShowsAnOverwrittenValueOfItsOwn(t *testing.T) {
	// A batch that sets a key twice commits only the second value; the
	// first never was the store's state, so no reader may see it, not even
	// while Apply is still telling the cache about its writes.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	cacheKey(t, db, "k", "v0")
	var seen []string
	db.hooks.afterWrite = func(key []byte) {
		if v, ok := cached(db, string(key)); ok {
			seen = append(seen, v)
		}
	}
	b := db.NewBatch()
	b.Set([]byte("k"), []byte("first"))
	b.Set([]byte("k"), []byte("last"))
	require.NoError(t, db.Apply(b))
	db.hooks.afterWrite = nil

	assert.NotContains(t, seen, "first", "the cache served a value the batch overwrote")
	got, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "last", string(got))
}

func TestRowCache_ReadsDoNotGoBackInTimeDuringAWrite(t *testing.T) {
	// A reader (R0) read v0 from Pebble and stalls before caching it. A
	// Set of v1 commits; before it has told the cache, Get A reads v1 from
	// Pebble, then R0 caches what it read. Get B, which starts after A
	// returned v1, must not be served the older v0: a stripe with a write
	// in flight takes no puts, and R0's stripe has moved since it looked.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	ctx := context.Background()
	k := []byte("k")
	require.NoError(t, db.Set(k, []byte("v0")))
	_, _, ok, gen := db.cache.get(k)
	require.False(t, ok, "k is not cached yet")
	v0, closer, err := db.pdb.Get(k)
	require.NoError(t, err)
	r0 := bytes.Clone(v0)
	require.NoError(t, closer.Close())

	var a, b []byte
	db.hooks.afterWrite = func([]byte) { // v1 is in Pebble, not yet in the cache
		a, err = db.Get(ctx, k)
		require.NoError(t, err)
		db.cache.c.Wait()
		db.cache.put(k, r0, 0, gen) // R0 resumes
		db.cache.c.Wait()
		b, err = db.Get(ctx, k)
		require.NoError(t, err)
	}
	require.NoError(t, db.Set(k, []byte("v1")))
	db.hooks.afterWrite = nil

	require.Equal(t, "v1", string(a), "A read the committed value")
	assert.Equal(t, "v1", string(b), "B, started after A returned v1, was served an older value")
}

func TestRowCache_NothingReadDuringAWriteIsCached(t *testing.T) {
	// A Get that looks while a write is in flight may read Pebble before
	// the commit (v0) while another reads it after (v1) and returns: what
	// the first read must not be cached, or a later Get would be served
	// v0 after v1 was returned.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	ctx := context.Background()
	k := []byte("k")
	require.NoError(t, db.Set(k, []byte("v0")))

	gen := db.cache.beforeWrite(k) // a Set of v1 starts
	_, _, ok, g := db.cache.get(k)
	require.False(t, ok)
	v0, _, err := db.readStorage(k, g) // before the commit: caches nothing
	require.NoError(t, err)
	require.Equal(t, "v0", string(v0))
	require.NoError(t, db.pdb.Set(k, valfmt.Append(nil, []byte("v1"), 0), db.wopts)) // the commit
	a, err := db.Get(ctx, k)
	require.NoError(t, err)
	require.Equal(t, "v1", string(a))
	db.cache.c.Wait()
	b, err := db.Get(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, "v1", string(b), "a value read while the write was in flight was served")
	db.cache.afterWrite(k, []byte("v1"), 0, false, gen)

	assert.False(t, db.cache.put(k, []byte("v0"), 0, g), "a put from before the write's end")
	got, err := db.Get(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, "v1", string(got))
}

func TestRowCache_AWriteAdmitsNoNewKey(t *testing.T) {
	// A load must not churn the cache: only keys already cached are
	// refreshed by a write.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	require.NoError(t, db.Set([]byte("k"), []byte("v")))
	db.cache.c.Wait()
	_, ok := cached(db, "k")
	assert.False(t, ok)
}

func TestRowCache_AWriteOvertakenByALaterOneDoesNotRefresh(t *testing.T) {
	// The first Set reaches Pebble, then a second Set of the key runs to
	// its end before the first tells the cache: Pebble holds the second
	// value, and the first must not put its own back into the cache.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	cacheKey(t, db, "k", "v0")
	var nested atomic.Bool
	db.hooks.afterWrite = func(key []byte) {
		if nested.CompareAndSwap(false, true) { // the first write only
			require.NoError(t, db.Set(key, []byte("second")))
		}
	}
	require.NoError(t, db.Set([]byte("k"), []byte("first")))
	db.hooks.afterWrite = nil

	require.Equal(t, "second", scanned(t, db, "k"), "Pebble ordered the second write last")
	if v, ok := cached(db, "k"); ok {
		assert.Equal(t, "second", v, "the cache holds a value Pebble has overwritten")
	}
	got, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "second", string(got))
}

func TestGet_CacheCoherenceWithWritersRacingOnAKey(t *testing.T) {
	// Several writers of one cached key at once, then the key is read:
	// whichever write Pebble ordered last is what Get returns, cached or
	// not. Each round races the writers' refreshes anew.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	ctx := context.Background()
	const rounds, writers = 300, 4
	for r := range rounds {
		key := fmt.Sprintf("k%d", r%8)
		_, _, err := db.read([]byte(key)) // cached, if it exists yet
		if err != nil {
			require.ErrorIs(t, err, ErrNotFound)
		}
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				assert.NoError(t, db.Set([]byte(key), fmt.Appendf(nil, "round %d writer %d", r, w)))
			})
		}
		wg.Wait()
		want := scanned(t, db, key)
		for range 2 { // from Pebble or the cache, then from the cache
			got, err := db.Get(ctx, []byte(key))
			require.NoError(t, err)
			require.Equal(t, want, string(got), "round %d", r)
		}
	}
	assert.Positive(t, db.Stats().RowCache.Hits)
}

func TestGet_NeverOlderThanACompletedWriteOrRead(t *testing.T) {
	// One writer per key writes increasing even numbers, some through
	// batches that set the key twice (odd, then even: the odd one is never
	// committed). Readers check that a Get returns neither less than the
	// last write that returned before it started, nor less than any Get
	// that returned before it started, nor an odd number. A small cache
	// keeps entries coming and going.
	db := openTest(t, "", &Options{InMemory: true, NoSync: true, Workers: 2, RowCacheSize: 1 << 16})
	const keys, last = 4, 3000
	key := func(i int) []byte { return fmt.Appendf(nil, "key%d", i) }
	var written, read [keys]atomic.Int64
	for i := range keys {
		require.NoError(t, db.Set(key(i), []byte("0")))
	}
	var writers sync.WaitGroup
	for i := range keys {
		writers.Go(func() {
			for v := int64(2); v <= last; v += 2 {
				var err error
				if v%6 == 0 {
					b := db.NewBatch()
					b.Set(key(i), strconv.AppendInt(nil, v-1, 10))
					b.Set(key(i), strconv.AppendInt(nil, v, 10))
					err = db.Apply(b)
				} else {
					err = db.Set(key(i), strconv.AppendInt(nil, v, 10))
				}
				if !assert.NoError(t, err) {
					return
				}
				written[i].Store(v)
			}
		})
	}
	var stop atomic.Bool
	var readers sync.WaitGroup
	for r := range 4 {
		readers.Go(func() {
			for j := r; !stop.Load(); j++ {
				i := j % keys
				floor := max(written[i].Load(), read[i].Load())
				got, err := db.Get(context.Background(), key(i))
				if !assert.NoError(t, err) {
					return
				}
				n, err := strconv.ParseInt(string(got), 10, 64)
				require.NoError(t, err)
				if n < floor || n%2 == 1 {
					assert.Failf(t, "a Get went back in time", "key%d: got %d, after %d was written or read", i, n, floor)
					return
				}
				for m := read[i].Load(); n > m && !read[i].CompareAndSwap(m, n); m = read[i].Load() {
				}
			}
		})
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	// On a loaded machine the writers may finish before the readers have
	// read a key twice between writes: reads of the settled keys hit, once
	// ristretto has taken the puts in its buffers (until then their
	// entries hold the small cache's memory, and a put finds it full).
	db.cache.c.Wait()
	for i := range keys {
		for range 2 {
			_, err := db.Get(context.Background(), key(i))
			require.NoError(t, err)
			db.cache.c.Wait()
		}
	}
	s := db.Stats().RowCache
	assert.Positive(t, s.Hits, "the cache served some of the reads: %+v", s)
}

// Keys that share a hash share ristretto's entry (it is keyed by the hash):
// each costs the other misses, never a wrong value, as the arena answers
// only for the key it holds.
func TestRowCache_KeysSharingAHashNeverServeEachOther(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	db.cache.hashOf = func([]byte) uint64 { return 42 }
	ctx := context.Background()
	cacheKey(t, db, "a", "va")
	_, ok := cached(db, "b")
	assert.False(t, ok, "b is not a's")
	cacheKey(t, db, "b", "vb")
	_, ok = cached(db, "a")
	assert.False(t, ok, "b's entry took a's place")
	for i := range 50 {
		for _, k := range []string{"a", "b", "a", "a", "b"} {
			v, err := db.Get(ctx, []byte(k))
			require.NoError(t, err)
			require.Equal(t, "v"+k, string(v), "round %d", i)
		}
		if i == 25 {
			require.NoError(t, db.Set([]byte("a"), []byte("va"))) // refreshes or drops the shared entry
		}
	}
	assert.Positive(t, db.cache.hits.Load(), "hits still served")
}

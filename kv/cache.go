package kv

import (
	"bytes"
	"hash/maphash"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"
)

// rowCache is a ristretto cache of values in front of Get that never returns
// a value older than a completed write.
//
// ristretto applies Set through a buffer, asynchronously, so an insert can
// land after the Del that was meant to remove it. Deleting on write is
// therefore not enough; each entry carries its key's stripe word as it was
// when the value was read from Pebble, and a hit from another word is a
// miss. A write moves the word when it starts and again when Pebble has it,
// and the word counts the writes in flight: a Get puts what it read only if
// no write was in flight when it looked and none has started since. A
// value read while a write was in flight may be older than one another Get
// has already returned (that Get read Pebble after the commit); caching it
// would let a later Get go back in time.
//
// A write thus also drops the other entries of its stripe. So that a
// write-heavy mix does not empty the cache, there are about twice as many
// stripes as the cache holds entries (one per 128 bytes of its size, a
// power of two between 4,096 and 4 Mi): a write then costs the entries of
// other keys 0.5 on average, where 4,096 fixed stripes cost a 32 MiB cache
// ~25. The stripes' 8 bytes each (6% of the size) come out of the size,
// so the cache's memory stays within RowCacheSize.
type rowCache struct {
	c    *ristretto.Cache[[]byte, *cacheEntry]
	seed maphash.Seed
	gens []atomic.Uint64
	mask uint64
	// ranges is the stripes' word for range deletions, which may cover any
	// key: every entry carries it too, and a range deletion moves it as a
	// write moves its stripe's, so that once it has ended no entry from
	// before it is served and nothing read while it was in flight is put.
	ranges atomic.Uint64

	hits, misses, evictions atomic.Int64
}

const (
	minStripes, maxStripes = 1 << 12, 1 << 22
	bytesPerStripe         = 128

	// A stripe's word holds a generation above a count of the writes in
	// flight (its low bits): a write adds writeStarts when it starts and
	// writeEnds when it ends, and each moves the generation by one (the end
	// by its carry out of the count, which the write's own start made
	// non-zero). 24 bits allow 16 Mi writes of one stripe at once.
	inFlightBits = 24
	inFlightMask = 1<<inFlightBits - 1
	writeStarts  = 1<<inFlightBits + 1
	writeEnds    = 1<<inFlightBits - 1
	// entryOverhead is what an entry costs beyond its key and value:
	// ristretto's item (~56 bytes) and our cacheEntry (56 bytes).
	entryOverhead = 112
)

type cacheEntry struct {
	key, val []byte
	stamp    cacheStamp
}

// cacheStamp is what a reader saw of the words that guard an entry when it
// looked in the cache — its key's stripe and the range word — and what a
// writer saw when it started: put takes only values read under stamps
// with no write in flight and not moved since.
type cacheStamp struct {
	gen, ranges uint64
}

// clean reports whether no write of the stripe and no range deletion was
// in flight when st was taken.
func (st cacheStamp) clean() bool { return (st.gen|st.ranges)&inFlightMask == 0 }

// stripesFor is the number of stripes for a cache of size bytes.
func stripesFor(size int64) int {
	n := minStripes
	for n < maxStripes && int64(n)*2*bytesPerStripe <= size {
		n *= 2
	}
	return n
}

func newRowCache(size int64) (*rowCache, error) {
	n := stripesFor(size)
	rc := &rowCache{seed: maphash.MakeSeed(), gens: make([]atomic.Uint64, n), mask: uint64(n - 1)}
	size = max(size-int64(n)*8, 1)
	c, err := ristretto.NewCache(&ristretto.Config[[]byte, *cacheEntry]{
		// Ten counters per entry that fits, at ~200 bytes an entry.
		NumCounters:        max(size/200*10, 1000),
		MaxCost:            size,
		BufferItems:        64,
		IgnoreInternalCost: true, // entries are costed by their real size
		OnEvict:            func(*ristretto.Item[*cacheEntry]) { rc.evictions.Add(1) },
	})
	if err != nil {
		return nil, err
	}
	rc.c = c
	return rc, nil
}

func (rc *rowCache) stripe(key []byte) *atomic.Uint64 {
	return &rc.gens[maphash.Bytes(rc.seed, key)&rc.mask]
}

// get returns a copy of key's cached value, and the stamp to give put
// after a miss.
func (rc *rowCache) get(key []byte) (val []byte, ok bool, st cacheStamp) {
	val, ok, st = rc.lookup(key)
	if !ok {
		rc.misses.Add(1)
	}
	return val, ok, st
}

// stamp reads key's words now.
func (rc *rowCache) stamp(key []byte) cacheStamp {
	return cacheStamp{gen: rc.stripe(key).Load(), ranges: rc.ranges.Load()}
}

// lookup is get counting hits only: Get's fast path counts its misses
// itself, as it knows only after the lookup whether it served the read.
// Entries carry only stamps with no write in flight (put), so a stripe with
// one, or a range deletion in flight, serves no hits.
func (rc *rowCache) lookup(key []byte) (val []byte, ok bool, st cacheStamp) {
	st = rc.stamp(key)
	if e, found := rc.c.Get(key); found && e.stamp == st && bytes.Equal(e.key, key) {
		rc.hits.Add(1)
		return bytes.Clone(e.val), true, st
	}
	return nil, false, st
}

// put caches val, read from Pebble after get returned st, unless a write to
// the stripe or a range deletion was in flight then or has started since;
// it says whether it did.
func (rc *rowCache) put(key, val []byte, st cacheStamp) bool {
	if !st.clean() || rc.stamp(key) != st {
		return false
	}
	buf := make([]byte, len(key)+len(val))
	copy(buf, key)
	copy(buf[len(key):], val)
	e := &cacheEntry{key: buf[:len(key):len(key)], val: buf[len(key):], stamp: st}
	rc.c.Set(e.key, e, int64(len(buf))+entryOverhead)
	return true
}

// beforeWrite is called before a write of key goes to Pebble: from now on
// the stripe serves no hits and takes no puts until the write has ended
// (written). It returns the stamp for written: the stripe's word with the
// write counted, and the range word.
func (rc *rowCache) beforeWrite(key []byte) cacheStamp {
	return cacheStamp{gen: rc.stripe(key).Add(writeStarts), ranges: rc.ranges.Load()}
}

// written ends a write of key that beforeWrite started, once Pebble has it
// or the write failed: val is the value written (nil with del, a delete, or
// a failed write) and st what beforeWrite returned.
//
// Every cached value of the stripe is stale from the write's start. A key
// the cache holds then gets the value just written, so a hot key read
// after its update is still a hit (workloads that update what they read,
// such as YCSB A and F, would otherwise miss on every read after a write).
// That is only right if this write is the key's last in Pebble and no Get
// has read past it: so only if no other write of the stripe started or
// ended while this one was in flight, none was in flight when it started,
// and no range deletion started or ended meanwhile either (it and this
// write may have committed in either order). Keys the cache does not hold
// are not admitted by a write: a bulk load would churn the cache.
func (rc *rowCache) written(key, val []byte, del bool, st cacheStamp) {
	g := rc.stripe(key).Add(writeEnds)
	if !del && g == st.gen+writeEnds { // put refuses if others are in flight
		if _, found := rc.c.Get(key); found && rc.put(key, val, cacheStamp{gen: g, ranges: st.ranges}) {
			return
		}
	}
	rc.c.Del(key)
}

// beforeRangeDelete is called before a range deletion goes to Pebble: from
// now on no entry is served and none is put until it has ended
// (rangeDeleted, with what this returned).
func (rc *rowCache) beforeRangeDelete() uint64 { return rc.ranges.Add(writeStarts) }

// rangeDeleted ends a range deletion, committed or failed. The range word
// has moved for good: every entry from before it is stale.
func (rc *rowCache) rangeDeleted(uint64) { rc.ranges.Add(writeEnds) }

func (rc *rowCache) close() { rc.c.Close() }

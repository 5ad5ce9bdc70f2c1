package kv

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/coopkv/coopkv/internal/stripe"
	"github.com/coopkv/coopkv/kv/internal/arena"
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
// write-heavy mix does not empty the cache, there are about as many
// stripes as the cache holds entries at most (one per 256 bytes of its
// size, where an entry takes at least 224: a chunk and its index; a power
// of two between 4,096 and 1 Mi): a write then costs the entries of other
// keys at most ~1, and 0.2 at 1 KiB values, where 4,096 fixed stripes cost
// a 32 MiB cache ~25. The stripes' 8 bytes each (3% of the size, 8 MiB at
// most) come out of the size, so the cache's memory stays within
// RowCacheSize.
//
// The keys and values live off the Go heap, in an arena (package arena),
// so that the cache can be sized to the memory budget without the
// collector's headroom doubling it: ristretto holds, per key, only the
// entry's Ref in the arena and its stamp, with no pointer for the collector
// to scan, and is the admission and eviction policy; its OnExit frees the
// entry's chunks. A hit that races the eviction of its entry is a miss
// (the arena checks the entry's generation after the copy).
type rowCache struct {
	c   *ristretto.Cache[uint64, cacheEntry] // by keyHash: see newRowCache
	mem *arena.Arena
	// hashOf is keyHash; a test makes keys share a hash.
	hashOf func(key []byte) uint64
	gens   []atomic.Uint64
	mask   uint64
	// ranges is the stripes' word for range deletions, which may cover any
	// key: every entry carries it too, and a range deletion moves it as a
	// write moves its stripe's, so that once it has ended no entry from
	// before it is served and nothing read while it was in flight is put.
	ranges atomic.Uint64

	// door keeps out the values of keys that had not missed before.
	door *doorkeeper

	// hits is striped by the key's hash: every hit adds to it, on every
	// core at once. A miss costs a Pebble read; one counter does.
	hits              stripe.Counter
	misses, evictions atomic.Int64
	// heldBack counts values the doorkeeper kept out.
	heldBack atomic.Int64
	// full counts values not cached because the arena had no room: its
	// policy's cost lags the arena while ristretto's buffers drain.
	full atomic.Int64
}

const (
	minStripes, maxStripes = 1 << 12, 1 << 20
	bytesPerStripe         = 256

	// A stripe's word holds a generation above a count of the writes in
	// flight (its low bits): a write adds writeStarts when it starts and
	// writeEnds when it ends, and each moves the generation by one (the end
	// by its carry out of the count, which the write's own start made
	// non-zero). 24 bits allow 16 Mi writes of one stripe at once.
	inFlightBits = 24
	inFlightMask = 1<<inFlightBits - 1
	writeStarts  = 1<<inFlightBits + 1
	writeEnds    = 1<<inFlightBits - 1
	// entryOverhead is what an entry costs on the Go heap beyond its
	// chunks in the arena: ristretto's stored item and its policy's entry.
	entryOverhead = 96
	// minEntryCost is the least an entry costs: a chunk and entryOverhead.
	minEntryCost = arena.ChunkSize + entryOverhead
)

// cacheEntry is what ristretto holds for a key: where the arena has its
// entry, and the stamp under which the value was read. No pointers: the
// collector does not scan ristretto's maps of them.
type cacheEntry struct {
	ref   arena.Ref
	stamp cacheStamp
	exp   int64 // the value's expiry (0: none): a hit judges it (judged)
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
	rc := &rowCache{hashOf: keyHash, gens: make([]atomic.Uint64, n), mask: uint64(n - 1)}
	rc.door = newDoorkeeper(size / minEntryCost)
	// The stripes, the doorkeeper's bits and the arena's bit per chunk
	// come out of the size.
	size = max(size-int64(n)*8-rc.door.bytes()-size/(8*arena.ChunkSize), 2*arena.ChunkSize)
	mem, err := arena.New(size)
	if err != nil {
		return nil, err
	}
	// ristretto is keyed by the key's hash, the one the stripes and the
	// doorkeeper use, so a lookup hashes the key once (ristretto hashes a
	// []byte key twice more). Two keys with one hash share an entry: the
	// arena holds the key and answers only for it, so they cost each
	// other misses, never a wrong value.
	c, err := ristretto.NewCache(&ristretto.Config[uint64, cacheEntry]{
		// Ten counters per entry that fits, at most 4 Mi: ~3 bytes each,
		// allocated at once, where a cache of 512 MiB of 1 KiB values
		// holds ~370,000.
		NumCounters:        min(max(size/minEntryCost*10, 1000), 1<<22),
		MaxCost:            size,
		BufferItems:        64,
		IgnoreInternalCost: true, // entries are costed by their real size
		OnEvict:            func(*ristretto.Item[cacheEntry]) { rc.evictions.Add(1) },
		// Every value that leaves — evicted, rejected, replaced or deleted
		// — frees its chunks. ristretto also calls it with the zero value
		// for a Del of a key it does not hold; freeing the zero Ref, or an
		// entry freed already, does nothing.
		OnExit: func(e cacheEntry) { mem.Free(e.ref) },
	})
	if err != nil {
		_ = mem.Close()
		return nil, err
	}
	rc.c, rc.mem = c, mem
	return rc, nil
}

func (rc *rowCache) hash(key []byte) uint64 { return rc.hashOf(key) }

// keySeed seeds keyHash, the one hash of a key the store's stripes use:
// the row cache's and its doorkeeper's, and the oracle's.
var keySeed = maphash.MakeSeed()

// keyHash hashes key for the store's stripe tables.
func keyHash(key []byte) uint64 { return maphash.Bytes(keySeed, key) }

func (rc *rowCache) stripe(key []byte) *atomic.Uint64 { return rc.stripeOf(rc.hash(key)) }

func (rc *rowCache) stripeOf(h uint64) *atomic.Uint64 { return &rc.gens[h&rc.mask] }

// get returns a copy of key's cached value and its expiry, and the stamp to
// give put after a miss.
func (rc *rowCache) get(key []byte) (val []byte, exp int64, ok bool, st cacheStamp) {
	val, exp, ok, st = rc.lookup(key)
	if !ok {
		rc.misses.Add(1)
	}
	return val, exp, ok, st
}

// stamp reads key's words now.
func (rc *rowCache) stamp(key []byte) cacheStamp { return rc.stampOf(rc.hash(key)) }

// stampOf reads the words of a key whose hash is h now.
func (rc *rowCache) stampOf(h uint64) cacheStamp {
	return cacheStamp{gen: rc.stripeOf(h).Load(), ranges: rc.ranges.Load()}
}

// lookup is get counting hits only: Get's fast path counts its misses
// itself, as it knows only after the lookup whether it served the read.
// Entries carry only stamps with no write in flight (put), so a stripe with
// one, or a range deletion in flight, serves no hits.
func (rc *rowCache) lookup(key []byte) (val []byte, exp int64, ok bool, st cacheStamp) {
	h := rc.hash(key)
	st = rc.stampOf(h)
	if e, found := rc.c.Get(h); found && e.stamp == st {
		if val, ok := rc.mem.Get(e.ref, key); ok {
			rc.hits.Add(h>>32, 1)
			return val, e.exp, true, st
		}
	}
	return nil, 0, false, st
}

// put caches val, expiring at exp, read from Pebble after get returned st, unless a write to
// the stripe or a range deletion was in flight then or has started since,
// or the key had not missed before (the doorkeeper); it says whether it
// did.
func (rc *rowCache) put(key, val []byte, exp int64, st cacheStamp) bool {
	return rc.putIf(key, val, exp, st, true)
}

// putIf is put, with the doorkeeper asked only when door is set: a write
// that replaces a cached value does not ask.
func (rc *rowCache) putIf(key, val []byte, exp int64, st cacheStamp, door bool) bool {
	h := rc.hash(key)
	if !st.clean() || rc.stampOf(h) != st {
		return false
	}
	if door && !rc.door.admit(doorHash(h)) {
		rc.heldBack.Add(1)
		return false
	}
	ref, cost, ok := rc.mem.Put(key, val)
	if !ok {
		if arena.Cost(len(key), len(val)) > 0 {
			rc.full.Add(1)
		}
		return false
	}
	// A Set ristretto drops (its buffer full, or closed) never reaches
	// OnExit: the chunks are freed here. One it takes frees them on exit.
	if !rc.c.Set(h, cacheEntry{ref: ref, stamp: st, exp: exp}, cost+entryOverhead) {
		rc.mem.Free(ref)
		return false
	}
	return true
}

// doorHash is the doorkeeper's hash of a key whose stripe hash is h:
// rotated, so that its bits and the stripe's differ.
func doorHash(h uint64) uint64 { return bits.RotateLeft64(h, 32) }

// keys lists the keys the cache holds, up to maxBytes of them, for the hot
// set.
func (rc *rowCache) keys(maxBytes int) [][]byte {
	var out [][]byte
	rc.mem.Keys(func(k []byte) bool {
		if maxBytes -= len(k); maxBytes < 0 {
			return false
		}
		out = append(out, k)
		return true
	})
	return out
}

// beforeWrite is called before a write of key goes to Pebble: from now on
// the stripe serves no hits and takes no puts until the write has ended
// (afterWrite). It returns the stamp for afterWrite: the stripe's word with the
// write counted, and the range word.
func (rc *rowCache) beforeWrite(key []byte) cacheStamp {
	return cacheStamp{gen: rc.stripe(key).Add(writeStarts), ranges: rc.ranges.Load()}
}

// afterWrite ends a write of key that beforeWrite started, once Pebble has it
// or the write failed: val is the value written (nil with del, a delete,
// or a failed write), exp its expiry, and st what beforeWrite returned.
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
// are not admitted by a write: a bulk load would churn the cache. The
// write counts as the key's first miss for the doorkeeper instead, so that
// a key read soon after it was written (YCSB D's latest keys) is cached
// from its first read.
func (rc *rowCache) afterWrite(key, val []byte, exp int64, del bool, st cacheStamp) {
	h := rc.hash(key)
	g := rc.stripeOf(h).Add(writeEnds)
	if !del {
		rc.door.admit(doorHash(h))
	}
	if !del && g == st.gen+writeEnds { // put refuses if others are in flight
		if _, found := rc.c.Get(h); found && rc.putIf(key, val, exp, cacheStamp{gen: g, ranges: st.ranges}, false) {
			return
		}
	}
	rc.c.Del(h)
}

// beforeRangeDelete is called before a range deletion goes to Pebble: from
// now on no entry is served and none is put until it has ended
// (rangeDeleted, with what this returned).
func (rc *rowCache) beforeRangeDelete() uint64 { return rc.ranges.Add(writeStarts) }

// rangeDeleted ends a range deletion, committed or failed. The range word
// has moved for good: every entry from before it is stale.
func (rc *rowCache) rangeDeleted(uint64) { rc.ranges.Add(writeEnds) }

// close closes ristretto, whose goroutine frees entries until then, and
// unmaps the arena. The store calls it with every read and write done.
func (rc *rowCache) close() {
	rc.c.Close()
	_ = rc.mem.Close()
}

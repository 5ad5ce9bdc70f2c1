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
// therefore not enough; each entry carries the write generation of its key's
// stripe at the time it was read from Pebble, a write bumps the stripe's
// generation after Pebble has it, and a hit from an older generation is a
// miss. A Get whose Pebble read raced with a write to the stripe does not
// insert what it read.
type rowCache struct {
	c    *ristretto.Cache[[]byte, *cacheEntry]
	seed maphash.Seed
	gens [cacheStripes]atomic.Uint64

	hits, misses, evictions atomic.Int64
}

const (
	cacheStripes = 1 << 12
	// entryOverhead is what an entry costs beyond its key and value:
	// ristretto's item (~56 bytes) and our cacheEntry (56 bytes).
	entryOverhead = 112
)

type cacheEntry struct {
	key, val []byte
	gen      uint64
}

func newRowCache(size int64) (*rowCache, error) {
	rc := &rowCache{seed: maphash.MakeSeed()}
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
	return &rc.gens[maphash.Bytes(rc.seed, key)&(cacheStripes-1)]
}

// get returns a copy of key's cached value, and the stripe generation to
// give put after a miss.
func (rc *rowCache) get(key []byte) (val []byte, ok bool, gen uint64) {
	gen = rc.stripe(key).Load()
	if e, found := rc.c.Get(key); found && e.gen == gen && bytes.Equal(e.key, key) {
		rc.hits.Add(1)
		return bytes.Clone(e.val), true, gen
	}
	rc.misses.Add(1)
	return nil, false, gen
}

// put caches val, read from Pebble after get returned gen, unless a write to
// the stripe has completed since.
func (rc *rowCache) put(key, val []byte, gen uint64) {
	if rc.stripe(key).Load() != gen {
		return
	}
	buf := make([]byte, len(key)+len(val))
	copy(buf, key)
	copy(buf[len(key):], val)
	e := &cacheEntry{key: buf[:len(key):len(key)], val: buf[len(key):], gen: gen}
	rc.c.Set(e.key, e, int64(len(buf))+entryOverhead)
}

// invalidate is called after a write of key has reached Pebble.
func (rc *rowCache) invalidate(key []byte) {
	rc.stripe(key).Add(1)
	rc.c.Del(key)
}

func (rc *rowCache) close() { rc.c.Close() }

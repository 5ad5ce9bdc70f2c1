package kv

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// Memtable sizing: see tunePebble.
const (
	minMemTableSize = 4 << 20 // Pebble's default
	maxMemTableSize = 64 << 20
	// indexBlockSize keeps a table's index in one block (see tunePebble).
	indexBlockSize = 256 << 10
	memTableShare  = 8 // a memtable is this fraction of the block cache
	memTables      = 4 // memtables, the mutable one included, before writes stall
)

// memTableSize is the memtable size for a block cache of cacheSize bytes.
func memTableSize(cacheSize int64) uint64 {
	return uint64(min(max(cacheSize/memTableShare, minMemTableSize), maxMemTableSize))
}

// tunePebble sets what Pebble's defaults leave out, for a block cache of
// cacheSize bytes. The measurements behind each choice, and the settings
// tried and left at Pebble's defaults, are in cmd/kvbench's README ("The
// store's Pebble settings").
//
// Bloom filters: Pebble has none unless asked; with one, a Get of a
// missing key skips the tables that cannot hold it.
//
// Memtables: Pebble reserves each memtable's size in the block cache, so
// memtables and cached blocks share CacheSize, and a memtable sized apart
// from the cache can crowd the blocks out. So the memtable is an eighth of
// the cache (4 MiB, Pebble's default, up to 64 MiB), and up to four are
// kept before writes stall, where Pebble keeps two: the memtables take at
// most half the cache, and that only while flushes lag behind writes.
// Fewer, larger flushes mean less compaction, which on a small machine
// takes its CPU from reads.
//
// Index blocks: Pebble's default index block is as small as a data block
// (4 KiB), so a table of more than ~100 blocks gets a two-level index and
// every point read seeks two index blocks before its data block. 256 KiB
// index blocks (as CockroachDB sets them) keep a one-level index for
// tables up to ~6,000 data blocks.
//
// The format is the newest Pebble knows, for new stores only (see Open).
func tunePebble(po *pebble.Options, cacheSize int64) {
	for i := range po.Levels {
		l := &po.Levels[i]
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.FilterType = pebble.TableFilter
		l.IndexBlockSize = indexBlockSize
	}
	po.MemTableSize = memTableSize(cacheSize)
	po.MemTableStopWritesThreshold = memTables
}

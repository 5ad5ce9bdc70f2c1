package kv

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// Memtable sizing: see tunePebble.
const (
	minMemTableSize = 4 << 20 // Pebble's default
	maxMemTableSize = 64 << 20
	memTableShare   = 8 // a memtable is this fraction of the block cache
	memTables       = 4 // memtables, the mutable one included, before writes stall
)

// memTableSize is the memtable size for a block cache of cacheSize bytes.
func memTableSize(cacheSize int64) uint64 {
	return uint64(min(max(cacheSize/memTableShare, minMemTableSize), maxMemTableSize))
}

// tunePebble sets what Pebble's defaults leave out, for a block cache of
// cacheSize bytes.
//
// Bloom filters: Pebble has none unless asked; with one, a Get of a
// missing key skips the tables that cannot hold it.
//
// Memtables: Pebble reserves each memtable's size in the block cache, so
// memtables and cached blocks share CacheSize, and a memtable sized apart
// from the cache can crowd the blocks out — 32 MiB memtables beside the
// default 64 MiB cache cut read-only YCSB C by a third or more. So the
// memtable is an eighth of the cache (4 MiB, Pebble's default, up to 64
// MiB), and up to four are kept before writes stall, where Pebble keeps
// two: the memtables take at most half the cache, and that only while
// flushes lag behind writes. Fewer, larger flushes mean less compaction,
// which on a small machine takes its CPU from reads. Measured with
// cmd/kvbench/ycsb (workloads load, a, b, c on coopkv-mlfq, runs of each
// setting interleaved; 2 CPUs, 2026-12-02): at the default 64 MiB cache
// (8 MiB memtables, three pairs) load +5–23%, A +21–26%, B and C within
// the noise (B −3 to +5%, C −8 to +2%); with a 256 MiB cache (32 MiB
// memtables, two pairs against 4 MiB ones) A +31–78%, B +20–55%.
//
// Left at Pebble's defaults, after trying them (same measure): one
// compaction at a time (two gained nothing on 2 CPUs); L0 thresholds (a
// store without CockroachDB's admission control keeps Pebble's write stall
// at 12 L0 sublevels, which bounds read amplification); 4 KiB blocks (16
// and 32 KiB ones sped YCSB E's short scans by 25–53% but slowed the point
// reads of C by 6–20%, and point reads are most of what a store in front
// of a service serves); Snappy compression. The format is the newest
// Pebble knows, for new stores only (see Open).
func tunePebble(po *pebble.Options, cacheSize int64) {
	for i := range po.Levels {
		l := &po.Levels[i]
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.FilterType = pebble.TableFilter
	}
	po.MemTableSize = memTableSize(cacheSize)
	po.MemTableStopWritesThreshold = memTables
}

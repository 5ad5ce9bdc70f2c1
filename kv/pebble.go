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
// Index blocks: Pebble's default index block is as small as a data block
// (4 KiB), so a table of more than ~100 blocks gets a two-level index and
// every point read seeks two index blocks before its data block — half of
// Pebble's Get time in a YCSB C profile. 256 KiB index blocks (as
// CockroachDB sets them) keep a one-level index for tables up to ~6,000
// data blocks. Measured alone (cmd/kvbench/ycsb, coopkv-mlfq, 300,000
// operations, three rounds with the order rotated, 2026-12-03): C 138–153 k
// ops/s (12.6–14.2 µs CPU/op) against 105–132 k (14.8–17.3), A 65–84 k
// against 60–75 k, the load 83–99 k against 74–90 k.
//
// Left at Pebble's defaults, after trying them (same measure): one
// compaction at a time (two gained nothing on 2 CPUs); L0 thresholds (a
// store without CockroachDB's admission control keeps Pebble's write stall
// at 12 L0 sublevels, which bounds read amplification); 4 KiB blocks (16
// and 32 KiB ones sped YCSB E's short scans by 25–53% but slowed the point
// reads of C by 6–20%, and point reads are most of what a store in front
// of a service serves; 8 KiB ones, with the index above, were within the
// noise on A and C); Snappy compression on every level (none on L0–L4,
// where the hot blocks live, gained nothing beside the index change: C
// 129–151 k against 138–153 k; MinLZ neither: C 128–132 k, A 65–76 k
// against the base's 105–132 k and 60–75 k in the same rounds); bloom
// filters of 10 bits (without them C read the same — YCSB reads keys that
// exist — but a Get of a missing key would search every level). With the
// cache sized by memory, memtables stay at their 64 MiB cap: 16 and 32 MiB
// ones made the load 13–20% slower and A no faster. The format is the
// newest Pebble knows, for new stores only (see Open).
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

package kv

import (
	"runtime"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// Pebble's defaults suit its tests, not a store in production: a 4 MiB
// memtable, compactions that start late and one at a time, an index block
// as small as a data block. tunePebble sets what CockroachDB sets
// (pkg/storage's DefaultPebbleOptions), scaled for an embedded store that
// shares a small machine with its program. Each value and its reason:
const (
	// A 4 MiB memtable flushes every few thousand writes into small L0
	// tables that every read must merge and compactions must rewrite.
	// CockroachDB uses 64 MiB; half that keeps an embedded store's memory
	// modest.
	memTableSize = 32 << 20
	// Up to four memtables (128 MiB) may wait for a flush before writes
	// stop (Pebble: 2): a burst of writes waits for memory, not the disk.
	memTableStopWrites = 4
	// Compact L0 into Lbase as soon as two sublevels overlap (CockroachDB;
	// Pebble: 4): each one is a file every Get and scan merges.
	l0CompactionThreshold = 2
	// Stop writes only when L0 is far behind (Pebble: 12). CockroachDB sets
	// 1000 and throttles writes earlier by admission control, which an
	// embedded store does not have; 36 sublevels still bound the read
	// amplification a write burst can cause.
	l0StopWrites = 36
	// A single-level index up to 256 KiB (CockroachDB; Pebble: the data
	// block size, 4 KiB, which makes most tables' indexes two-level, one
	// more block to read per Get).
	indexBlockSize = 256 << 10
)

func tunePebble(po *pebble.Options) {
	po.MemTableSize = memTableSize
	po.MemTableStopWritesThreshold = memTableStopWrites
	po.L0CompactionThreshold = l0CompactionThreshold
	po.L0StopWritesThreshold = l0StopWrites
	// One compaction at a time normally, more (up to half the CPUs, at
	// least 2) when L0 or the compaction debt grows, as Pebble's heuristics
	// decide; the reads keep the rest of the machine.
	po.CompactionConcurrencyRange = func() (int, int) {
		return 1, max(2, min(runtime.GOMAXPROCS(0)/2, 4))
	}
	for i := range po.Levels {
		l := &po.Levels[i]
		// Pebble has no bloom filter unless asked: with one, a Get of a
		// missing key skips the tables that cannot hold it.
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.FilterType = pebble.TableFilter
		l.IndexBlockSize = indexBlockSize
	}
}

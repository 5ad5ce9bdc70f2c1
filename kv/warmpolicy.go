package kv

import (
	"bytes"
	"slices"
	"time"
)

// Warming the block cache: the rules, apart from the goroutines.
//
// Pebble puts into its block cache only the blocks that reads miss: the
// tables a flush or a compaction writes start cold, so after a load every
// first read of a block is a pread and a decode (RocksDB's
// prepopulate_block_cache answers the same cost). The warmer reads the key
// spans those tables cover through a Pebble iterator, which fills the cache
// as any read does, as read-pool work at the lowest priority (warmer.go).
// What it may do at a given moment is warmPolicy's decision; what is left
// to warm is a warmSpans.

// warmState is what warmPolicy decides from.
type warmState struct {
	// capacity, used and reserved are the block cache's size, the bytes
	// its blocks take, and the bytes set aside for memtables.
	capacity, used, reserved int64
	// diskSlow says the table reads' moving average is slow (diskReads).
	diskSlow bool
	// compacting counts the compactions running: their reads and writes
	// take the CPU the warmer would, and the tables they read are about to
	// be deleted, their blocks with them.
	compacting int
	// sinceWrite is the time since a flush or compaction last ended.
	sinceWrite time.Duration
}

// warmVerdict is warmPolicy's decision.
type warmVerdict uint8

const (
	warmGo         warmVerdict = iota // read the next batch
	warmCacheFull                     // no room: warming would evict blocks the reads put there
	warmDiskSlow                      // the reads would queue beside the foreground's
	warmCompacting                    // wait for the compaction to end
	warmWriting                       // the tree is changing: its new tables may soon be compacted again
)

func (v warmVerdict) String() string {
	switch v {
	case warmGo:
		return "go"
	case warmCacheFull:
		return "cache full"
	case warmDiskSlow:
		return "disk slow"
	case warmCompacting:
		return "compacting"
	case warmWriting:
		return "writing"
	}
	return "unknown"
}

// warmPolicy says whether the warmer may read now.
type warmPolicy struct {
	// headroom is the room the warmer leaves free in the block cache: the
	// cache is sharded, and a shard that fills evicts even while others
	// have room, so warming stops short of full.
	headroom int64
	// quiet is how long the tree must go without a flush or compaction
	// ending before the warmer reads: under a sustained load, the tables
	// flushes and compactions write are soon compacted again, and warming
	// them would be CPU spent on blocks about to leave the cache.
	quiet time.Duration
}

// warmQuiet is the policy's quiet: longer than the gap between a load's
// flushes and compactions, short beside the minutes a restarted or freshly
// loaded store reads for.
const warmQuiet = time.Second

// newWarmPolicy is the policy for a block cache of capacity bytes: it
// leaves a sixteenth free, at least 1 MiB.
func newWarmPolicy(capacity int64) warmPolicy {
	return warmPolicy{headroom: max(capacity/16, 1<<20), quiet: warmQuiet}
}

// decide is the verdict for the next batch of at most batch bytes. A slow
// disk is looked at first (it is the foreground's loss), then room.
func (p warmPolicy) decide(s warmState, batch int64) warmVerdict {
	switch {
	case s.diskSlow:
		return warmDiskSlow
	case s.used+s.reserved+batch+p.headroom > s.capacity:
		return warmCacheFull
	case s.compacting > 0:
		return warmCompacting
	case s.sinceWrite < p.quiet:
		return warmWriting
	}
	return warmGo
}

const (
	// warmRestBusy is how long the warmer waits after a step while the
	// CPU was busy: a step of 1 ms in 50 takes 2% of one CPU.
	warmRestBusy = 50 * time.Millisecond
	// warmBusy is the share of the CPU (of GOMAXPROCS) the rest of the
	// process must leave free for the warmer to run back to back.
	warmBusy = 0.5
)

// warmRest is how long the warmer waits before its next step, 0 for not
// at all, after a step in a window of span during which the rest of the
// process used others of CPU time, on procs CPUs: warmRestBusy when the
// others used more than half the CPU.
//
// Warming takes the CPU of the reads and writes it would spare, so it
// runs only on a CPU they leave (the measurements behind this are in
// cmd/kvbench/ycsb's README).
func warmRest(others, span time.Duration, procs int) time.Duration {
	if span <= 0 || float64(others) <= warmBusy*float64(span)*float64(max(procs, 1)) {
		return 0
	}
	return warmRestBusy
}

// warmDensity: a span is warmed only if the tables it came from are at
// least 1/warmDensity of the bytes of every table it overlaps (warmDense).
const warmDensity = 4

// warmDense reports whether a span worth warming: its tables' bytes
// against the bytes of all the tables a scan of it reads. The warmer reads
// a span through an iterator, which reads every level's blocks in it, not
// only the new table's; a flush of keys spread over the whole key space
// (hashed keys, as YCSB's) writes a table whose span is the whole store,
// and warming it would read the whole store again for a few new blocks.
func warmDense(tables, overlapped uint64) bool {
	return tables*warmDensity >= overlapped
}

// warmSpan is a span of user keys to warm, both ends included, and the
// bytes of the tables it came from.
type warmSpan struct {
	lo, hi []byte
	bytes  int64
}

// warmSpans is the work left: disjoint spans in key order, overlapping or
// touching ones merged, so a key is read once however many tables covered
// it. At most limit spans are kept; past it the two spans closest in order
// (the first pair, for want of a distance between keys) are merged, which
// may warm the keys between them too, never fewer.
type warmSpans struct {
	spans []warmSpan
	limit int
}

// add adds the span [lo, hi] of bytes bytes; lo ≤ hi. It keeps copies.
func (w *warmSpans) add(lo, hi []byte, n int64) {
	s := warmSpan{lo: slices.Clone(lo), hi: slices.Clone(hi), bytes: n}
	// The first span that ends at or after lo, and the first that starts
	// after hi: those between overlap s.
	i, _ := slices.BinarySearchFunc(w.spans, lo, func(e warmSpan, k []byte) int { return bytes.Compare(e.hi, k) })
	j := i
	for j < len(w.spans) && bytes.Compare(w.spans[j].lo, hi) <= 0 {
		if bytes.Compare(w.spans[j].lo, s.lo) < 0 {
			s.lo = w.spans[j].lo
		}
		if bytes.Compare(w.spans[j].hi, s.hi) > 0 {
			s.hi = w.spans[j].hi
		}
		s.bytes += w.spans[j].bytes
		j++
	}
	w.spans = slices.Replace(w.spans, i, j, s)
	if w.limit > 0 && len(w.spans) > w.limit {
		a, b := w.spans[0], w.spans[1]
		w.spans = slices.Replace(w.spans, 0, 2, warmSpan{lo: a.lo, hi: b.hi, bytes: a.bytes + b.bytes})
	}
}

// take removes and returns the first span; ok is false when none is left.
func (w *warmSpans) take() (s warmSpan, ok bool) {
	if len(w.spans) == 0 {
		return warmSpan{}, false
	}
	s = w.spans[0]
	w.spans = slices.Delete(w.spans, 0, 1)
	return s, true
}

// bytes is the bytes of the tables the spans left came from.
func (w *warmSpans) bytes() int64 {
	var n int64
	for _, s := range w.spans {
		n += s.bytes
	}
	return n
}

func (w *warmSpans) len() int { return len(w.spans) }

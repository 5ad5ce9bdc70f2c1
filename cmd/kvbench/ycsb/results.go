package main

import (
	"time"

	"github.com/coopkv/coopkv/kv"

	// go-ycsb's core workload registers itself.
	_ "github.com/pingcap/go-ycsb/pkg/workload"
)

// What a run reports: the JSON schema of its results, and the figures a
// coopkv store's Stats give each phase.

// loadPhase is the name of the load in results: the inserts of the
// records, before the workloads.
const loadPhase = "load"

// results is everything a run found, and how it ran: the JSON report.
type results struct {
	Tool       string       `json:"tool"` // go-ycsb and its version
	GoVersion  string       `json:"go_version"`
	GOOS       string       `json:"goos"`
	GOARCH     string       `json:"goarch"`
	NumCPU     int          `json:"num_cpu"`
	GOMAXPROCS int          `json:"gomaxprocs"`
	Started    time.Time    `json:"started"`
	Records    int64        `json:"records"`
	Operations int64        `json:"operations"`
	Threads    int          `json:"threads"`
	FieldCount int64        `json:"field_count"`
	FieldLen   int64        `json:"field_length"`
	Workloads  []string     `json:"workloads"` // in run order
	Isolated   bool         `json:"isolated"`  // each store ran in a child process of its own (--isolate)
	Reopen     bool         `json:"reopen"`    // each store was closed and opened again before each workload (--reopen)
	Timeline   bool         `json:"timeline"`  // each phase has its operations per second (--timeline)
	Stores     []storeInfo  `json:"stores"`
	Phases     []phaseStats `json:"phases"` // per store: the load, then the workloads in run order
}

// storeInfo is a store as it was run.
type storeInfo struct {
	Name       string            `json:"name"`
	Driver     string            `json:"driver"` // the go-ycsb binding
	About      string            `json:"about"`
	Properties map[string]string `json:"properties"` // the store's own, as opened (temporary paths included)
	Memory     storeMemory       `json:"memory"`
	// Sizes are a coopkv store's memory bounds in force, and Writes its
	// writes from its open to the end of its last phase; nil for the
	// other stores.
	Sizes  *kvSizes    `json:"sizes,omitempty"`
	Writes *writeStats `json:"writes,omitempty"`
}

// kvSizes are the sizes a coopkv store runs with, in bytes: what bounds
// its memory besides the Go heap.
type kvSizes struct {
	// BlockCacheCapacity is Pebble's block cache, memtables included
	// (Pebble reserves them in it), allocated in C as blocks are read.
	BlockCacheCapacity int64 `json:"block_cache_capacity_bytes"`
	// MemTableSize is one memtable; kv keeps up to four before writes
	// stall (Pebble's MemTableStopWritesThreshold), inside the block
	// cache's capacity.
	MemTableSize int64 `json:"memtable_size_bytes"`
	// RowCacheCapacity is the row cache, on the Go heap; 0 = off.
	RowCacheCapacity int64 `json:"row_cache_capacity_bytes"`
}

// sizesOf returns the sizes in force of a store.
func sizesOf(st kv.Stats) *kvSizes {
	return &kvSizes{
		BlockCacheCapacity: st.Storage.BlockCacheCapacity,
		MemTableSize:       int64(st.Storage.MemTableSize),
		RowCacheCapacity:   st.RowCache.Capacity,
	}
}

// writeStats are the bytes a coopkv store wrote, over one phase
// (phaseStats.Writes) or from its open (storeInfo.Writes).
type writeStats struct {
	// WALBytes is what the write-ahead log wrote: the bytes taken in.
	WALBytes int64 `json:"wal_bytes"`
	// FlushedBytes and CompactedBytes are what memtable flushes and
	// compactions wrote to tables. Over a phase they include the flushes
	// and compactions of what earlier phases wrote, if they ran then.
	FlushedBytes   int64 `json:"flushed_bytes"`
	CompactedBytes int64 `json:"compacted_bytes"`
	// WriteAmp is (WALBytes + FlushedBytes + CompactedBytes) ÷ WALBytes
	// over the same span; 0 when the WAL wrote nothing (a read-only
	// phase).
	WriteAmp float64 `json:"write_amp"`
	// WriteAmpSinceOpen is Pebble's own write amplification since the
	// store opened, at the phase's end (kv.StorageStats.WriteAmp: the same
	// ratio, ingested tables counted in, of which this runner has none).
	// Set on phases only.
	WriteAmpSinceOpen float64 `json:"write_amp_since_open,omitempty"`
}

// writeAmp is (wal + flushed + compacted) ÷ wal, or 0 for no wal.
func writeAmp(wal, flushed, compacted int64) float64 {
	if wal <= 0 {
		return 0
	}
	return float64(wal+flushed+compacted) / float64(wal)
}

// writesSinceOpen are a store's writes from its open to the snapshot st.
func writesSinceOpen(st kv.Stats) *writeStats {
	w := &writeStats{
		WALBytes:       int64(st.Storage.WALBytesWritten),
		FlushedBytes:   int64(st.Storage.FlushedBytes),
		CompactedBytes: int64(st.Storage.CompactedBytes),
	}
	w.WriteAmp = writeAmp(w.WALBytes, w.FlushedBytes, w.CompactedBytes)
	return w
}

// writeDelta returns a store's writes between two snapshots.
func writeDelta(before, after kv.Stats) *writeStats {
	b, a := writesSinceOpen(before), writesSinceOpen(after)
	w := &writeStats{
		WALBytes:          a.WALBytes - b.WALBytes,
		FlushedBytes:      a.FlushedBytes - b.FlushedBytes,
		CompactedBytes:    a.CompactedBytes - b.CompactedBytes,
		WriteAmpSinceOpen: after.Storage.WriteAmp,
	}
	w.WriteAmp = writeAmp(w.WALBytes, w.FlushedBytes, w.CompactedBytes)
	return w
}

// phaseStats is one store's load or one workload on it.
type phaseStats struct {
	Store      string  `json:"store"`
	Workload   string  `json:"workload"`   // "load" or a … f
	Operations int64   `json:"operations"` // records loaded, or operationcount; a read-modify-write is one
	Elapsed    float64 `json:"elapsed_sec"`
	OpsPerSec  float64 `json:"ops_per_sec"` // Operations / Elapsed: YCSB's overall throughput
	// CPUPerOp is the process's CPU time (user + system) over the phase ÷
	// Operations, in µs: the go-ycsb client's share included, alike for
	// every store. On a shared machine it moves less than throughput
	// does, as time lost to other tenants' work is not counted; 0 where
	// the process's CPU time cannot be read.
	CPUPerOp float64 `json:"cpu_us_per_op"`
	Errors   int64   `json:"errors"` // operations that failed (go-ycsb's *_ERROR)
	// FirstError is the error of the phase's first failed call ("" when
	// none failed).
	FirstError string    `json:"first_error,omitempty"`
	Ops        []opStats `json:"ops"`
	// Memory is the process's memory during the phase.
	Memory memStats `json:"memory"`
	// Caches and Writes are a coopkv store's cache lookups and writes over
	// the phase; nil for the other stores.
	Caches *cacheStats `json:"caches,omitempty"`
	Writes *writeStats `json:"writes,omitempty"`
	// TxnRetries is how many times an update's transaction ran again
	// after a conflict during the phase, within the same operation (a
	// binding that retries: coopkv's, badger v4's); nil for the others.
	TxnRetries *int64 `json:"txn_retries,omitempty"`
	// Timeline (--timeline, timeline.go) is the operations completed in
	// each whole second from the phase's start, a read-modify-write one,
	// as Operations counts them; TailOps those completed after the last
	// whole second. Together they sum to Operations. Empty in a phase
	// shorter than a second; nil (left out) without --timeline.
	Timeline *[]float64 `json:"timeline_ops_per_sec,omitempty"`
	TailOps  float64    `json:"timeline_tail_ops,omitempty"`
	// First5s is the operations in the first 5 s ÷ 5, and Steady the
	// median of Timeline's seconds that start in the phase's second
	// half: their ratio says how far from its pace the store started.
	// 0 (left out) where the phase was too short: under 5 s for First5s,
	// under 3 s for Steady.
	First5s float64 `json:"first5s_ops_per_sec,omitempty"`
	Steady  float64 `json:"steady_ops_per_sec,omitempty"`
	// Reopen is the time the store took to close and open again before
	// this workload (--reopen); nil without it, and for the load.
	Reopen *reopenStats `json:"reopen,omitempty"`
}

// hasTimeline says the phase's timeline was recorded (--timeline).
func (ps *phaseStats) hasTimeline() bool { return ps.Timeline != nil }

// txnStore is a binding whose updates are transactions that it runs
// again on a conflict (coopkvdb.DB, badger4db.DB).
type txnStore interface{ TxnRetries() int64 }

// cacheStats are a coopkv store's lookups in its two caches during one
// phase: where its reads were served says more about a figure than the
// figure does (a read that misses both caches is a pread).
type cacheStats struct {
	RowCacheHits      int64   `json:"row_cache_hits"`
	RowCacheMisses    int64   `json:"row_cache_misses"`
	RowCacheHitRate   float64 `json:"row_cache_hit_rate"`
	BlockCacheHits    int64   `json:"block_cache_hits"`
	BlockCacheMisses  int64   `json:"block_cache_misses"`
	BlockCacheHitRate float64 `json:"block_cache_hit_rate"`
	// WarmKeys and WarmBlockBytes are what the store's warmer read into
	// its block cache during the phase; HotSetWarmedIn is how long after
	// the store opened its saved hot set was warm, 0 until then (the
	// store's figure at the phase's end, seconds).
	WarmKeys       int64   `json:"warm_keys"`
	WarmBlockBytes int64   `json:"warm_block_bytes"`
	HotSetWarmedIn float64 `json:"hot_set_warmed_in_sec"`
}

// kvStore is a binding with a coopkv store underneath (coopkvdb.DB).
type kvStore interface{ KV() *kv.DB }

// cacheDelta returns the cache lookups between two snapshots of a store.
func cacheDelta(before, after kv.Stats) *cacheStats {
	c := &cacheStats{
		RowCacheHits:     after.RowCache.Hits - before.RowCache.Hits,
		RowCacheMisses:   after.RowCache.Misses - before.RowCache.Misses,
		BlockCacheHits:   after.Storage.BlockCacheHits - before.Storage.BlockCacheHits,
		BlockCacheMisses: after.Storage.BlockCacheMisses - before.Storage.BlockCacheMisses,
		WarmKeys:         after.Warm.Keys - before.Warm.Keys,
		WarmBlockBytes:   after.Warm.BlockBytes - before.Warm.BlockBytes,
		HotSetWarmedIn:   after.Warm.HotSetWarmedIn.Seconds(),
	}
	c.RowCacheHitRate = hitRate(c.RowCacheHits, c.RowCacheMisses)
	c.BlockCacheHitRate = hitRate(c.BlockCacheHits, c.BlockCacheMisses)
	return c
}

func hitRate(hits, misses int64) float64 {
	if hits+misses <= 0 {
		return 0
	}
	return float64(hits) / float64(hits+misses)
}

// opStats are go-ycsb's measurements of one operation type in a phase.
// Latencies are in microseconds, from go-ycsb's HDR histogram (3
// significant digits). In workload F, READ and UPDATE include the read and
// the write of each READ_MODIFY_WRITE, which go-ycsb measures both alone
// and together.
type opStats struct {
	Op        string  `json:"op"` // READ, UPDATE, INSERT, SCAN, READ_MODIFY_WRITE, …
	Count     int64   `json:"count"`
	Errors    int64   `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"` // Count / the phase's elapsed time
	AvgUs     int64   `json:"avg_us"`
	MinUs     int64   `json:"min_us"`
	MaxUs     int64   `json:"max_us"`
	P50Us     int64   `json:"p50_us"`
	P90Us     int64   `json:"p90_us"`
	P95Us     int64   `json:"p95_us"`
	P99Us     int64   `json:"p99_us"`
	P999Us    int64   `json:"p999_us"`
	P9999Us   int64   `json:"p9999_us"`
}

// op returns the stats of op, if the phase has them.
func (ps *phaseStats) op(name string) (opStats, bool) {
	for _, o := range ps.Ops {
		if o.Op == name {
			return o, true
		}
	}
	return opStats{}, false
}

package kv

import (
	"time"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// Stats is a JSON-encodable snapshot of a store.
type Stats struct {
	Scheduler Scheduler `json:"scheduler"`
	Closed    bool      `json:"closed"`
	// Failed is the cause of the store's failure (ErrFailed), empty while
	// it is healthy; DiskFull says writes are refused for want of space
	// (ErrDiskFull).
	Failed   string          `json:"failed,omitempty"`
	DiskFull bool            `json:"disk_full,omitempty"`
	Pool     *readpool.Stats `json:"pool,omitempty"` // nil with SchedulerDirect
	// Groups are the resource groups' figures, under resource control.
	Groups []resource.GroupStats `json:"groups,omitempty"`
	// Runaway counts the reads runaway rules caught, per group and action,
	// and lists the live watches (Options.Runaway, GroupConfig.Runaway);
	// nil with SchedulerDirect.
	Runaway  *resource.RunawayStats `json:"runaway,omitempty"`
	RowCache RowCacheStats          `json:"row_cache"`
	Storage  StorageStats           `json:"storage"`
	// Warm is what warming the caches did (Options.NoWarm); its Enabled is
	// false when it is off.
	Warm WarmStats `json:"warm"`
	// Sweep is what the deletion of expired keys did; its Enabled is
	// false on a store whose keys cannot expire, read-only, or with
	// Options.NoSweep.
	Sweep SweepStats `json:"sweep"`
}

// RowCacheStats describes the value cache in front of Get.
type RowCacheStats struct {
	Enabled bool `json:"enabled"`
	// Capacity is the cache's size in force, in bytes (Options.RowCacheSize).
	Capacity  int64   `json:"capacity"`
	Hits      int64   `json:"hits"`
	Misses    int64   `json:"misses"` // stale entries (older than a write) count as misses
	Evictions int64   `json:"evictions"`
	HitRate   float64 `json:"hit_rate"`
	// Bytes is what the cached entries take of the cache's memory now (off
	// the Go heap, in chunks of 128 bytes).
	Bytes int64 `json:"bytes"`
	// Full counts values not cached because the memory was taken: the
	// policy evicts shortly after, as its buffers drain.
	Full int64 `json:"full"`
	// HeldBack counts values read on a miss and not cached because their
	// key had not missed before: a key is cached from its second miss.
	HeldBack int64 `json:"held_back"`
}

// StorageStats is a short summary of Pebble's state.
type StorageStats struct {
	Levels    []LevelStats `json:"levels"`
	DiskBytes uint64       `json:"disk_bytes"`
	// WALDiskBytes is what DiskBytes holds of write-ahead logs: the live
	// ones, and the obsolete ones Pebble keeps to reuse (a reused log keeps
	// its file's size, however little of it is written).
	WALDiskBytes      uint64  `json:"wal_disk_bytes"`
	MemtableBytes     uint64  `json:"memtable_bytes"`
	BlockCacheBytes   int64   `json:"block_cache_bytes"`
	BlockCacheHits    int64   `json:"block_cache_hits"`
	BlockCacheMisses  int64   `json:"block_cache_misses"`
	BlockCacheHitRate float64 `json:"block_cache_hit_rate"`
	// BlockCacheCapacity is the block cache's size in force, in bytes
	// (Options.CacheSize), memtables included: Pebble reserves them in it.
	BlockCacheCapacity int64 `json:"block_cache_capacity"`
	// MemTableSize is the size of one memtable in force, in bytes.
	MemTableSize uint64 `json:"memtable_size"`
	// WALBytesWritten is what the write-ahead log has written, framing
	// included: the bytes the store took in.
	WALBytesWritten uint64 `json:"wal_bytes_written"`
	// FlushedBytes and CompactedBytes are what flushes and compactions
	// have written to tables and blob files.
	FlushedBytes   uint64 `json:"flushed_bytes"`
	CompactedBytes uint64 `json:"compacted_bytes"`
	// WriteAmp is Pebble's write amplification: bytes written by the WAL,
	// flushes and compactions ÷ bytes taken in by the WAL and ingestion.
	WriteAmp float64 `json:"write_amp"`
	// TableReads counts the reads of tables from the filesystem (block
	// cache misses, and compactions' reads), and TableReadTime their time:
	// the mean read latency is the one over the other. DiskSlow says the
	// recent reads' moving average is at 30 µs or more (each read counted
	// at most 60 µs), and SlowTableReads counts the reads made while it
	// was, which let the pool run another read meanwhile (Options.Workers).
	TableReads     int64         `json:"table_reads"`
	TableReadTime  time.Duration `json:"table_read_time_ns"`
	DiskSlow       bool          `json:"disk_slow"`
	SlowTableReads int64         `json:"slow_table_reads"`
}

// LevelStats describes one level of the LSM tree.
type LevelStats struct {
	Level  int   `json:"level"`
	Tables int64 `json:"tables"`
	Bytes  int64 `json:"bytes"`
}

// Stats returns a snapshot. After Close only the scheduler and the final
// pool figures are filled in.
func (db *DB) Stats() Stats {
	s := Stats{Scheduler: db.opts.Scheduler, DiskFull: db.disk.IsFull()}
	if c := db.disk.Cause(); c != nil {
		s.Failed = c.Error()
	}
	if db.pool != nil {
		ps := db.pool.Stats()
		s.Pool = &ps
	}
	if db.sched != nil {
		s.Groups = db.groups.Stats()
	}
	if db.gov != nil {
		rs := db.gov.rw.Stats()
		s.Runaway = &rs
	}
	if db.warm != nil {
		s.Warm = db.warm.statsNow()
	}
	if db.sweep != nil {
		s.Sweep = db.sweep.statsNow()
	}
	if c := db.cache; c != nil {
		s.RowCache = RowCacheStats{Enabled: true, Capacity: db.opts.RowCacheSize, Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(), Bytes: c.mem.InUse(), Full: c.full.Load(), HeldBack: c.heldBack.Load()}
		s.RowCache.HitRate = rate(s.RowCache.Hits, s.RowCache.Misses)
	}
	s.Storage.TableReads, s.Storage.SlowTableReads = db.reads.reads.Load(), db.reads.told.Load()
	s.Storage.TableReadTime, s.Storage.DiskSlow = time.Duration(db.reads.took.Load()), db.reads.slow()
	if err := db.enter(); err != nil {
		s.Closed = true
		return s
	}
	defer db.mu.RUnlock()
	m := db.pdb.Metrics()
	for i, l := range m.Levels {
		s.Storage.Levels = append(s.Storage.Levels, LevelStats{Level: i, Tables: l.TablesCount, Bytes: l.TablesSize})
	}
	s.Storage.DiskBytes = m.DiskSpaceUsage()
	s.Storage.WALDiskBytes = m.WAL.PhysicalSize + m.WAL.ObsoletePhysicalSize
	s.Storage.MemtableBytes = m.MemTable.Size
	s.Storage.BlockCacheBytes = m.BlockCache.Size
	s.Storage.BlockCacheHits = m.BlockCache.Hits
	s.Storage.BlockCacheMisses = m.BlockCache.Misses
	s.Storage.BlockCacheHitRate = rate(m.BlockCache.Hits, m.BlockCache.Misses)
	s.Storage.BlockCacheCapacity = db.opts.CacheSize
	s.Storage.MemTableSize = db.popts.MemTableSize
	s.Storage.WALBytesWritten = m.WAL.BytesWritten
	for i := range m.Levels {
		l := &m.Levels[i]
		s.Storage.FlushedBytes += l.TableBytesFlushed + l.BlobBytesFlushed
		s.Storage.CompactedBytes += l.TableBytesCompacted + l.BlobBytesCompacted
	}
	// Total counts the WAL as written once more, as Pebble's own table does.
	total := m.Total()
	s.Storage.WriteAmp = total.WriteAmp()
	return s
}

func rate(hits, misses int64) float64 {
	if hits+misses == 0 {
		return 0
	}
	return float64(hits) / float64(hits+misses)
}

package kv

// With Options.TrimWAL, a store whose keys expire keeps its write-ahead log
// within a budget. Such a store writes values that the sweeper deletes
// seconds later, and Pebble keeps each write in the log until its memtable
// flushes, so the log's disk follows the memtable's size (set by the
// machine's memory, see tunePebble) rather than the live data. With the
// option the sweeper flushes the memtable once the log outgrows a share of
// the store's tables (walBudget). It is off by default because the live
// keys are then read from tables rather than the memtable, which costs the
// reads' tail (cmd/kvbench's README, "Keys that expire: login sessions").
const (
	// walShare: the log is flushed past 1/walShare of the tables' bytes.
	// Pebble keeps up to MemTableStopWritesThreshold+1 old logs to reuse
	// beside the live one, each as large as the largest it held, so the
	// logs take up to memTables+2 budgets on the disk: this share holds
	// them to half the tables.
	walShare = 2 * (memTables + 2)
	// minWALBudget is the least budget: a flush of a smaller log makes an
	// L0 table not worth its compaction.
	minWALBudget = 1 << 20
	// trimEvery is how many bytes written with a TTL make the sweeper
	// look at the log's budget; it also looks after it deletes.
	trimEvery = minWALBudget / 4
)

// walBudget is the most write-ahead log, in bytes, that a store whose keys
// expire keeps unflushed beside tables of tables bytes and memtables of
// memTable bytes (past which Pebble flushes on its own).
func walBudget(tables, memTable uint64) uint64 {
	return min(max(tables/walShare, minWALBudget), memTable)
}

// trimWAL flushes the memtable, without waiting, when the write-ahead log
// holds more than walBudget. It returns a channel closed when the flush is
// done, nil when it did not flush; while a flush it began is not done,
// pending is that flush's channel, and trimWAL waits for it rather than
// begin another: each flush begins a log, and Pebble keeps old ones to
// reuse.
func (db *DB) trimWAL(pending <-chan struct{}) <-chan struct{} {
	if pending != nil {
		select {
		case <-pending:
		default:
			return pending
		}
	}
	if err := db.enter(); err != nil {
		return nil
	}
	defer db.mu.RUnlock()
	m := db.pdb.Metrics()
	var tables uint64
	for i := range m.Levels {
		tables += uint64(m.Levels[i].TablesSize)
	}
	if m.Flush.NumInProgress > 0 || m.WAL.Size <= walBudget(tables, db.popts.MemTableSize) {
		return nil // a flush of Pebble's lets the log go
	}
	done, err := db.pdb.AsyncFlush()
	if err != nil {
		return nil
	}
	return done
}

package kv

import (
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Warm restart: the store saves its hot set (hotset.go) at Close and every
// hotSetEvery while open, and after Open queues the saved tables that are
// still there, hottest first and as many as the block cache has room for,
// to the warmer, and after them the row cache's keys.

// hotSetEvery is how often an open store saves its hot set, so that a
// process that dies without Close restarts warm too.
const hotSetEvery = 5 * time.Minute

// savesHotSet says whether the store keeps a hot set: not in memory (it
// dies with the process), not read-only (its directory is not to change),
// not without the warmer.
func (db *DB) savesHotSet() bool {
	return db.warm != nil && !db.opts.InMemory && !db.opts.ReadOnly
}

// hotTables is what the store has read of its live tables.
func (db *DB) hotTables() []hotTable {
	var tables []hotTable
	db.reads.tables.Range(func(k, v any) bool {
		t := v.(*tableReads)
		if n := t.read.Load(); n > 0 {
			tables = append(tables, hotTable{fileNum: k.(uint64), size: uint64(t.size), read: uint64(n)})
		}
		return true
	})
	hottestFirst(tables)
	return tables
}

// saveHotSet writes the hot set; a failure is logged, never returned: the
// hot set is a hint.
func (db *DB) saveHotSet() {
	hs := hotSet{tables: db.hotTables()}
	if db.cache != nil {
		hs.keys = db.cache.keys(maxHotKeyBytes)
	}
	if err := writeHotSet(db.popts.FS, db.dir, hs); err != nil {
		db.opts.Logger.Warn("kv: hot set not saved", "dir", db.dir, "error", err)
	}
}

// saveHotSetLater saves the hot set every hotSetEvery until Close.
func (db *DB) saveHotSetLater() {
	if err := db.enter(); err != nil {
		return
	}
	defer db.mu.RUnlock()
	db.saveHotSet()
	db.warm.saveTimer.Reset(hotSetEvery)
}

// loadHotSet queues the saved hot set's live tables to the warmer. A
// missing, damaged or stale file is logged and ignored.
func (db *DB) loadHotSet() {
	saved, err := readHotSet(db.popts.FS, db.dir)
	switch {
	case isNotExist(err):
		db.opts.Logger.Info("kv: no hot set to warm", "dir", db.dir)
		return
	case err != nil:
		db.opts.Logger.Warn("kv: hot set ignored", "dir", db.dir, "error", err)
		return
	}
	live, err := db.pdb.SSTables()
	if err != nil {
		db.opts.Logger.Warn("kv: hot set ignored", "dir", db.dir, "error", err)
		return
	}
	byNum := map[uint64]*pebble.TableInfo{}
	for _, level := range live {
		for i := range level {
			byNum[uint64(level[i].FileNum)] = &level[i].TableInfo
		}
	}
	w := db.warm
	room := w.cache.MaxSize() - w.reserved - w.policy.headroom - w.cache.Size()
	var queue []pebble.TableInfo
	var stale int
	for _, h := range saved.tables {
		t, ok := byNum[h.fileNum]
		if !ok || t.Size != h.size {
			stale++
			continue
		}
		if int64(t.Size) > room {
			break
		}
		room -= int64(t.Size)
		queue = append(queue, *t)
	}
	if stale > 0 {
		db.opts.Logger.Info("kv: hot set: tables gone since it was saved", "dir", db.dir, "gone", stale, "listed", len(saved.tables))
	}
	var rows [][]byte
	if db.cache != nil {
		rows = saved.keys
	}
	w.restore(queue, len(saved.tables), rows)
}

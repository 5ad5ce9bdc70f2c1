package kv

import (
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/kv/internal/diskfs"
)

// Flush writes the memtables out to sstables, so reads that follow hit
// tables (what a benchmark wants after loading). It fails with ErrFailed
// or ErrDiskFull, rather than wait for ever, when the disk cannot take
// the tables: Pebble retries a failed flush until it succeeds.
func (db *DB) Flush() error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if err := db.disk.Err(); err != nil {
		return fmt.Errorf("kv: flush: %w", err)
	}
	done, err := db.pdb.AsyncFlush()
	if err != nil {
		return fmt.Errorf("kv: flush: %w", err)
	}
	tick := time.NewTicker(diskfs.FullPause)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return db.committed(nil)
		case <-db.disk.Failed():
			return fmt.Errorf("kv: flush: %w", db.disk.Err())
		case <-tick.C:
			if db.disk.IsFull() {
				return fmt.Errorf("kv: flush: %w", db.disk.Err())
			}
		}
	}
}

// Checkpoint writes a consistent copy of the open store into dir, which
// must not exist; the copy opens with Open. Writes may go on meanwhile: the
// copy holds every write acknowledged before the call (NoSync's too: the
// WAL is flushed to its file first) and tears no batch. Table files are
// hard-linked where dir is on the store's filesystem, copied otherwise; a
// linked table costs no space until the store compacts it away. An
// in-memory store cannot be checkpointed, nor one opened ReadOnly (Pebble
// copies the OPTIONS file of the open, which a read-only open does not
// write): open it read-write.
func (db *DB) Checkpoint(dir string) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	switch {
	case db.opts.InMemory:
		return fmt.Errorf("kv: checkpoint to %s: an in-memory store has no files to copy", dir)
	case db.opts.ReadOnly:
		return fmt.Errorf("kv: checkpoint to %s: %w: Pebble copies the OPTIONS file of a read-write open", dir, ErrReadOnly)
	}
	db.disk.TakeDirSyncErr() // one from an earlier checkpoint is not ours
	err := db.pdb.Checkpoint(dir, pebble.WithFlushedWAL())
	if serr := db.disk.TakeDirSyncErr(); err == nil && serr != nil {
		err = fmt.Errorf("sync of the checkpoint's directory: %w", serr)
	}
	if err == nil && db.sweep != nil && db.sweep.marked.Load() {
		// The copy has held keys with a TTL too: it sweeps at its Open.
		err = writeMarker(db.popts.FS, dir)
	}
	if err != nil {
		return fmt.Errorf("kv: checkpoint to %s: %w", dir, err)
	}
	return nil
}

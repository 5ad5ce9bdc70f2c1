package kv

import (
	"errors"
	"fmt"
)

// Close ends the store: new calls fail with ErrClosed, running scans end
// (their Err says ErrClosed), running reads are waited for, and Pebble is
// closed. No goroutine or Pebble iterator of the store outlives it. Close is
// idempotent: a Close that meets another one waits for it to finish, and
// later ones return nil at once.
func (db *DB) Close() error {
	if db.closing.Swap(true) { // new calls fail from here
		<-db.closeDone
		return nil
	}
	defer close(db.closeDone)
	// Wait for the calls that entered before: a Scan hands its iterator to
	// the pool under mu, before the pool closes.
	db.mu.Lock()
	//lint:ignore SA2001 the empty critical section is the wait
	db.mu.Unlock()

	var errs []error
	if db.pool != nil {
		// Ends every read task, and with it every pooled scan's iterator.
		errs = append(errs, db.pool.Close())
	}
	if db.sweep != nil {
		// Its batch in the pool has ended; a deletion it is making, it
		// finishes (the write guard lets it: mu is not held here).
		db.sweep.close()
	}
	// Scans register under mu, shared, so none can register after this.
	// Ending one calls back into untrack: the map is taken first, so that
	// its lock is not held meanwhile.
	db.directMu.Lock()
	direct := db.direct
	db.direct = nil
	db.directMu.Unlock()
	for d := range direct {
		d.End(ErrClosed)
	}
	// No read uses a snapshot now (the pool and the direct scans have
	// ended, and direct reads hold mu): Pebble's are closed before Pebble.
	errs = append(errs, db.closeSnapshots())
	// No read runs now: what the tables gave the block cache is final.
	if db.savesHotSet() {
		db.warm.saveTimer.Stop()
		db.saveHotSet()
	}

	// Wait for calls that were already in Pebble when closed was set.
	db.mu.Lock()
	defer db.mu.Unlock()
	errs = append(errs, db.closeStorage())
	return errors.Join(errs...)
}

// closeStorage closes Pebble; it returns the store's failure, if it
// failed, as the reason its last writes may be missing.
func (db *DB) closeStorage() error {
	if db.cache != nil {
		db.cache.close()
	}
	db.disk.Close() // a write waiting for space gives up
	err := db.pdb.Close()
	for _, c := range db.closers {
		_ = c.Close()
	}
	if ferr := db.disk.FailedErr(); ferr != nil {
		return fmt.Errorf("kv: close: %w", ferr)
	}
	if err != nil {
		return fmt.Errorf("kv: close: %w", err)
	}
	return nil
}

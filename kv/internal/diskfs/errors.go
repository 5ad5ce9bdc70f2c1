package diskfs

import "errors"

// The store's errors for what the disk did. They are kv's — kv exports
// them as kv.ErrFailed and kv.ErrDiskFull, and their words are kv's — but
// live here, below kv, so that what FS returns matches them with
// errors.Is (as Pebble's ErrNotFound is its internal base.ErrNotFound).
var (
	// ErrFailed is returned, wrapping the cause, by every write after one
	// met a write error the store cannot recover from (see the package
	// comment), and by every change to the directory after it.
	ErrFailed = errors.New("kv: store failed")
	// ErrFull is returned, wrapping syscall.ENOSPC, by writes while the
	// disk is full (Health.Err).
	ErrFull = errors.New("kv: disk full")
)

package kv

import (
	"context"
	"time"

	"github.com/coopkv/coopkv/coproc"
)

// Snapshot is a consistent, read-only view of the store as of
// DB.NewSnapshot: its reads never see a later write, delete or range
// deletion. They run in the read pool like the DB's own — scheduled by the
// MLFQ or by resource group, charged, their deadlines honoured while they
// wait, ErrBusy when the pool is full — and do not consult the row cache,
// which holds the newest values.
//
// An open snapshot costs disk, not memory: Pebble keeps every version of a
// key it can see, so compactions keep the garbage it pins (overwritten and
// deleted values) until it is closed. Close snapshots soon. DB.Close closes
// the open ones; a read through a closed snapshot fails with ErrClosed. A
// Scan or MultiGet already running through a snapshot when it is closed
// finishes on the view it opened. A Snapshot is safe for concurrent use.
type Snapshot struct {
	// backend serves every call: the embedded store's snapshot
	// (dbSnapshot, DB.NewSnapshot) or another backend's (NewSnapshotFrom).
	backend SnapshotBackend
}

// Get is DB.Get on the snapshot's view (without the row cache).
func (s *Snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	return s.backend.Get(ctx, key)
}

// MultiGet is DB.MultiGet on the snapshot's view.
func (s *Snapshot) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	return s.backend.MultiGet(ctx, keys)
}

// Scan is DB.Scan on the snapshot's view.
func (s *Snapshot) Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator {
	return s.backend.Scan(ctx, start, end, opts)
}

// Coprocessor is DB.Coprocessor on the snapshot's view.
func (s *Snapshot) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	return s.backend.Coprocessor(ctx, req)
}

// ExpiresAt is DB.ExpiresAt on the snapshot's view: expiry is judged at
// the snapshot's time, so a key live when it was taken stays live in it.
func (s *Snapshot) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	if len(key) == 0 {
		return time.Time{}, ErrEmptyKey
	}
	eb, ok := s.backend.(ExpiryBackend)
	if !ok {
		return time.Time{}, ErrTTLUnsupported
	}
	return eb.ExpiresAt(ctx, key)
}

// Close releases the snapshot: later reads through it fail with ErrClosed.
// It is idempotent and returns nil also after DB.Close closed it.
func (s *Snapshot) Close() error { return s.backend.Close() }

package kv

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/scan"
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
	db *DB // nil for a backend's snapshot
	// mu guards snap against Close: every call into it holds mu shared,
	// and Close takes it alone (Pebble panics on a closed snapshot). For
	// a backend's snapshot it guards backendClosed.
	mu   sync.RWMutex
	snap *pebble.Snapshot // nil once closed
	// backend, when not nil, is the snapshot of a backend other than *DB
	// (NewSnapshotFrom), which serves every read.
	backend       SnapshotBackend
	backendClosed bool
}

// NewSnapshot returns a snapshot of the store as of now. It fails with
// ErrClosed after Close and with ctx's error when ctx is done.
func (db *DB) NewSnapshot(ctx context.Context) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, db.closedOr(fmt.Errorf("kv: new snapshot: %w", err))
	}
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	return db.trackSnapshot(db.pdb.NewSnapshot()), nil
}

// trackSnapshot wraps a Pebble snapshot, which Close will close if nobody
// does before; the caller holds mu shared.
func (db *DB) trackSnapshot(ps *pebble.Snapshot) *Snapshot {
	s := &Snapshot{db: db, snap: ps}
	db.snapMu.Lock()
	db.snapshots[s] = struct{}{} // not nil: Close has not begun, as we hold mu
	db.snapMu.Unlock()
	return s
}

// Close releases the snapshot: later reads through it fail with ErrClosed.
// It is idempotent and returns nil also after DB.Close closed it.
func (s *Snapshot) Close() error {
	if s.backend != nil {
		return s.closeBackend()
	}
	err := s.release()
	s.db.snapMu.Lock()
	if s.db.snapshots != nil {
		delete(s.db.snapshots, s)
	}
	s.db.snapMu.Unlock()
	return err
}

// release closes the Pebble snapshot once.
func (s *Snapshot) release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snap == nil {
		return nil
	}
	err := s.snap.Close()
	s.snap = nil
	return err
}

// use runs f on the Pebble snapshot, held open meanwhile, or returns
// ErrClosed.
func (s *Snapshot) use(f func(*pebble.Snapshot) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.snap == nil {
		return ErrClosed
	}
	return f(s.snap)
}

// closedOr is DB.closedOr, and ErrClosed for a closed snapshot too.
func (s *Snapshot) closedOr(err error) error {
	s.mu.RLock()
	closed := s.snap == nil
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return s.db.closedOr(err)
}

// The embedded snapshot is a view: every iterator opened on it sees the
// store as of NewSnapshot, and the row cache, which holds the newest
// values, never answers for it.
var _ view = (*Snapshot)(nil)

func (s *Snapshot) reader() scan.Reader      { return snapshotReader{s} }
func (s *Snapshot) fixed() bool              { return true }
func (s *Snapshot) cacheFor([]byte) cacheUse { return noCache }

// newIter opens an iterator over the snapshot.
func (s *Snapshot) newIter(o *pebble.IterOptions) (it *pebble.Iterator, err error) {
	err = s.use(func(snap *pebble.Snapshot) error {
		it, err = snap.NewIter(o)
		return err
	})
	return it, err
}

// snapshotReader is a Snapshot as scan.NewCursor reads it, kept off the
// Snapshot's own methods so that no Pebble iterator escapes the package.
type snapshotReader struct{ s *Snapshot }

func (r snapshotReader) NewIter(o *pebble.IterOptions) (*pebble.Iterator, error) {
	return r.s.newIter(o)
}

// read is view.read: key from the snapshot, a copy of its value, or
// ErrNotFound.
func (s *Snapshot) read(key []byte) (val []byte, err error) {
	err = s.use(func(snap *pebble.Snapshot) error {
		v, closer, err := snap.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		val = append(make([]byte, 0, len(v)), v...) // non-nil when empty
		return closer.Close()
	})
	return val, err
}

// Get is DB.Get on the snapshot's view (without the row cache).
func (s *Snapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	if s.backend != nil {
		if !s.backendOpen() {
			return nil, ErrClosed
		}
		return s.backend.Get(ctx, key)
	}
	return s.db.get(ctx, s, key)
}

// MultiGet is DB.MultiGet on the snapshot's view.
func (s *Snapshot) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	if s.backend != nil {
		if !s.backendOpen() {
			return nil, ErrClosed
		}
		return s.backend.MultiGet(ctx, keys)
	}
	return s.db.multiGet(ctx, s, keys)
}

// Scan is DB.Scan on the snapshot's view.
func (s *Snapshot) Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator {
	if s.backend != nil {
		if !s.backendOpen() {
			return &Iterator{err: ErrClosed}
		}
		return s.backend.Scan(ctx, start, end, opts)
	}
	return s.db.scan(ctx, s, start, end, opts)
}

// Coprocessor is DB.Coprocessor on the snapshot's view.
func (s *Snapshot) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	if s.backend != nil {
		if !s.backendOpen() {
			return nil, ErrClosed
		}
		return s.backend.Coprocessor(ctx, req)
	}
	return s.db.coprocessor(ctx, s, req)
}

// closeSnapshots closes the snapshots left open, for DB.Close, once no read
// can use them; later Snapshot.Close calls return nil.
func (db *DB) closeSnapshots() error {
	db.snapMu.Lock()
	open := db.snapshots
	db.snapshots = nil
	db.snapMu.Unlock()
	var errs []error
	for s := range open {
		errs = append(errs, s.release())
	}
	return errors.Join(errs...)
}

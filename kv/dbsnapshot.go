package kv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/scan"
)

// NewSnapshot returns a snapshot of the store as of now. It fails with
// ErrClosed after Close and with ctx's error when ctx is done.
func (db *DB) NewSnapshot(ctx context.Context) (*Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, db.closedOr(fmt.Errorf("kv: new snapshot: %w", err))
	}
	s, err := db.snapshot()
	if err != nil {
		return nil, err
	}
	return &Snapshot{backend: s}, nil
}

// snapshot takes a snapshot of the store as of now, which Close will close
// if nobody does before. It fails with ErrClosed after Close.
func (db *DB) snapshot() (*dbSnapshot, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	return db.trackSnapshot(db.pdb.NewSnapshot()), nil
}

// trackSnapshot wraps a Pebble snapshot, which Close will close if nobody
// does before; the caller holds mu shared.
func (db *DB) trackSnapshot(ps *pebble.Snapshot) *dbSnapshot {
	s := &dbSnapshot{db: db, snap: ps, time: db.now()}
	db.snapMu.Lock()
	db.snapshots[s] = struct{}{} // not nil: Close has not begun, as we hold mu
	db.snapMu.Unlock()
	return s
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

// dbSnapshot is the embedded store's snapshot: the backend of the Snapshot
// DB.NewSnapshot returns, and the view a Txn reads. Its reads are the DB's,
// on its view; it words its own failures (a read through it once closed
// fails with ErrClosed, wrapped as the DB's reads wrap it).
type dbSnapshot struct {
	db *DB
	// mu guards snap against Close: every call into it holds mu shared,
	// and Close takes it alone (Pebble panics on a closed snapshot).
	mu   sync.RWMutex
	snap *pebble.Snapshot // nil once closed
	// time is the snapshot's, at which its reads judge expiry (view.at).
	time int64
}

var _ SnapshotBackend = (*dbSnapshot)(nil)

// ExpiresAt implements ExpiryBackend.
func (s *dbSnapshot) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	return s.db.expiresAt(ctx, s, key)
}

// Get implements SnapshotBackend.
func (s *dbSnapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	return s.db.get(ctx, s, key)
}

// MultiGet implements SnapshotBackend.
func (s *dbSnapshot) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	return s.db.multiGet(ctx, s, keys)
}

// Scan implements SnapshotBackend.
func (s *dbSnapshot) Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator {
	return s.db.scan(ctx, s, start, end, opts)
}

// Coprocessor implements SnapshotBackend.
func (s *dbSnapshot) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	return s.db.coprocessor(ctx, s, req)
}

// Close implements SnapshotBackend: it releases the Pebble snapshot, once,
// and forgets it; nil also after DB.Close closed it.
func (s *dbSnapshot) Close() error {
	err := s.release()
	s.db.snapMu.Lock()
	if s.db.snapshots != nil {
		delete(s.db.snapshots, s)
	}
	s.db.snapMu.Unlock()
	return err
}

// release closes the Pebble snapshot once.
func (s *dbSnapshot) release() error {
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
func (s *dbSnapshot) use(f func(*pebble.Snapshot) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.snap == nil {
		return ErrClosed
	}
	return f(s.snap)
}

// The embedded snapshot is a view: every iterator opened on it sees the
// store as of NewSnapshot, and the row cache, which holds the newest
// values, never answers for it.
var _ view = (*dbSnapshot)(nil)

// reader is the snapshot itself: the type is unexported, so its NewIter
// hands no Pebble iterator outside the package.
func (s *dbSnapshot) reader() scan.Reader      { return s }
func (s *dbSnapshot) fixed() bool              { return true }
func (s *dbSnapshot) cacheFor([]byte) cacheUse { return noCache }
func (s *dbSnapshot) at() int64                { return s.time }
func (s *dbSnapshot) expiring() *atomic.Int64  { return nil }

// closedOr is DB.closedOr, and ErrClosed for a closed snapshot too.
func (s *dbSnapshot) closedOr(err error) error {
	s.mu.RLock()
	closed := s.snap == nil
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	return s.db.closedOr(err)
}

// NewIter implements scan.Reader: an iterator over the snapshot.
func (s *dbSnapshot) NewIter(o *pebble.IterOptions) (it *pebble.Iterator, err error) {
	err = s.use(func(snap *pebble.Snapshot) error {
		it, err = snap.NewIter(o)
		return err
	})
	return it, err
}

// read is view.read: key from the snapshot, a copy of its value and its
// expiry, or ErrNotFound.
func (s *dbSnapshot) read(key []byte) ([]byte, int64, error) {
	val, exp, err := s.readStored(key)
	if err != nil {
		return nil, 0, err
	}
	return judged(s, val, exp)
}

// readStored is read without the judging of expiry: for a view that
// judges it itself (a Txn's).
func (s *dbSnapshot) readStored(key []byte) (val []byte, exp int64, err error) {
	err = s.use(func(snap *pebble.Snapshot) error {
		v, closer, err := snap.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		val, exp, err = s.db.copyValue(v)
		return errors.Join(err, closer.Close())
	})
	return val, exp, err
}

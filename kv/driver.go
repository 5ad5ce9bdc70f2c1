package kv

import (
	"context"
	"io"
	"sync"
	"time"

	"github.com/coopkv/coopkv/coproc"
)

// This file is the driver surface: what a backend other than *DB (package
// kv/tikv, a test double) needs to implement Store with kv's own concrete
// Iterator, Snapshot and Batch, the way database/sql/driver serves
// database/sql. A Snapshot always reads through a SnapshotBackend — the
// embedded store's is one too (dbSnapshot) — at one interface call per
// read. An Iterator holds either its own machinery or a backend's Rows,
// and branches on which, so that no Scan of *DB pays an interface call per
// row. A Txn runs through a TxnBackend (NewTxnFrom), whose scans merge the
// transaction's own writes with MergeOwnWrites.

// Rows is a backend's running scan, read by the Iterator NewIterator makes
// of it. Only the Iterator's reader calls Next; Close may come from any
// goroutine, also while Next runs, and more than once.
type Rows interface {
	// Next returns the next pair: its key and value need stay valid only
	// until the next call of Next or Close. At the end it returns io.EOF
	// when the scan is complete, or the error that ended it.
	Next() (key, value []byte, err error)
	// Close ends the scan and frees what it holds. Next then returns
	// io.EOF or an error, never another pair.
	Close() error
}

// NewIterator returns an Iterator over a backend's rows: Next, Key, Value,
// Err, All and Close behave as they do for a Scan of *DB, and Value is nil
// when opts asks for KeysOnly. The backend applies the rest of opts (its
// Limit, its order) and words its own errors. Stats is zero unless rows
// has a method Stats() ReadStats.
func NewIterator(rows Rows, opts *ScanOptions) *Iterator {
	it := &Iterator{rows: &rowsReader{src: rows}}
	if opts != nil {
		it.keysOnly = opts.KeysOnly
	}
	return it
}

// rowsReader is a backend's Rows as an Iterator reads them: the current
// pair, held between calls of Next.
type rowsReader struct {
	src Rows
	k   []byte
	v   []byte
}

// key is the current key; nil when r is nil (a Scan of *DB between
// batches) or at the end.
func (r *rowsReader) key() []byte {
	if r == nil {
		return nil
	}
	return r.k
}

// value is the current value, as key is the current key.
func (r *rowsReader) value() []byte {
	if r == nil {
		return nil
	}
	return r.v
}

// statsSource returns the rows' Stats method, if they have one.
func (r *rowsReader) statsSource() (interface{ Stats() ReadStats }, bool) {
	if r == nil {
		return nil, false
	}
	s, ok := r.src.(interface{ Stats() ReadStats })
	return s, ok
}

// nextRow is Next over a backend's rows.
func (it *Iterator) nextRow() bool {
	r := it.rows
	k, v, err := r.src.Next()
	if err != nil {
		r.k, r.v = nil, nil
		if err != io.EOF {
			it.err = err
		}
		return false
	}
	r.k, r.v = k, v
	return true
}

// SnapshotBackend is a backend's snapshot, as NewSnapshotFrom wraps it: the
// methods of Snapshot, with the semantics Snapshot documents.
type SnapshotBackend interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator
	Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error)
	Close() error
}

// NewSnapshotFrom returns a Snapshot that reads through b. The Snapshot
// makes Close idempotent — b.Close runs once — and fails the reads that
// start after it with ErrClosed without calling b; a read that races with
// Close is b's to answer.
func NewSnapshotFrom(b SnapshotBackend) *Snapshot {
	return &Snapshot{backend: &backendSnapshot{b: b}}
}

// backendSnapshot is a backend's snapshot as NewSnapshotFrom wraps it: it
// calls b.Close once, and refuses the reads that start after it. The
// embedded store's snapshot (dbSnapshot) needs no such wrapper: it keeps
// its own state, and words its own errors.
type backendSnapshot struct {
	b      SnapshotBackend
	mu     sync.RWMutex // guards closed
	closed bool
}

// open reports whether the snapshot is still open.
func (s *backendSnapshot) open() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return !s.closed
}

func (s *backendSnapshot) Get(ctx context.Context, key []byte) ([]byte, error) {
	if !s.open() {
		return nil, ErrClosed
	}
	return s.b.Get(ctx, key)
}

func (s *backendSnapshot) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	if !s.open() {
		return nil, ErrClosed
	}
	return s.b.MultiGet(ctx, keys)
}

func (s *backendSnapshot) Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator {
	if !s.open() {
		return &Iterator{err: ErrClosed}
	}
	return s.b.Scan(ctx, start, end, opts)
}

func (s *backendSnapshot) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	if !s.open() {
		return nil, ErrClosed
	}
	return s.b.Coprocessor(ctx, req)
}

func (s *backendSnapshot) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	if !s.open() {
		return time.Time{}, ErrClosed
	}
	eb, ok := s.b.(ExpiryBackend)
	if !ok {
		return time.Time{}, ErrTTLUnsupported
	}
	return eb.ExpiresAt(ctx, key)
}

// Close closes b once.
func (s *backendSnapshot) Close() error {
	s.mu.Lock()
	done := s.closed
	s.closed = true
	s.mu.Unlock()
	if done {
		return nil
	}
	return s.b.Close()
}

// TxnBackend is a backend's transaction, as NewTxnFrom wraps it: the
// methods of Txn, with the semantics Txn documents. The Txn checks keys for
// emptiness and refuses calls once done; the backend is called for nothing
// after its Commit or Rollback, and Rollback is called at most once, never
// after Commit.
type TxnBackend interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator
	Set(key, value []byte) error
	Delete(key []byte) error
	// Commit applies the buffered writes or fails; it releases the
	// transaction either way.
	Commit(ctx context.Context) error
	Rollback()
}

// ExpiryBackend is what a backend's snapshot adds for keys that expire:
// Snapshot.ExpiresAt calls it, and fails with ErrTTLUnsupported on a
// backend without it.
type ExpiryBackend interface {
	ExpiresAt(ctx context.Context, key []byte) (time.Time, error)
}

// ExpiryTxnBackend is what a backend's transaction adds for keys that
// expire: Txn.SetWithTTL and Txn.ExpiresAt call it, and fail with
// ErrTTLUnsupported on a backend without it. SetWithTTL's ttl is positive
// (the Txn checks it); the expiry counts from the Commit.
type ExpiryTxnBackend interface {
	ExpiryBackend
	SetWithTTL(key, value []byte, ttl time.Duration) error
}

// NewTxnFrom returns a Txn that runs through b.
func NewTxnFrom(b TxnBackend) *Txn { return &Txn{b: b} }

// OwnWrite is a transaction's buffered write of a key, as MergeOwnWrites
// merges it into a scan of the transaction's snapshot.
type OwnWrite struct {
	Key, Value []byte
	Delete     bool
}

// MergeHooks tell a backend what a merged scan returned, for its read set.
type MergeHooks struct {
	// Row, when not nil, is called on the reader's goroutine with each row
	// about to be returned; fromSnapshot says whether the snapshot's scan
	// returned it (false: one of the transaction's own writes).
	Row func(key []byte, fromSnapshot bool)
	// End, when not nil, is called once when the scan stops without an
	// error: complete when it read its range to the end, false when it
	// stopped at its Limit or was closed before. Close may call it from
	// another goroutine than Row's.
	End func(complete bool)
}

// MergeOwnWrites returns Rows (for NewIterator) that merge under, a scan of
// a transaction's snapshot, with own, the transaction's writes in the
// scan's range in the scan's order: a write of a key replaces the
// snapshot's row, a deletion hides it. At most limit rows (0: all); under
// must be able to return limit + len(own) rows. Close closes under.
func MergeOwnWrites(under *Iterator, own []OwnWrite, limit int, reverse bool, hooks MergeHooks) Rows {
	return &mergedRows{under: under, own: own, limit: limit, reverse: reverse, hooks: hooks}
}

package kv

import (
	"sync/atomic"

	"github.com/coopkv/coopkv/internal/valfmt"
	"github.com/coopkv/coopkv/scan"
)

// A view is what a read of the embedded store reads: the store's live
// state (*DB, below), one of its snapshots (*dbSnapshot, dbsnapshot.go),
// or a Txn's snapshot (*txnView, dbtxn.go). Get, MultiGet, Scan and
// Coprocessor are written once, as methods of the DB that take the view
// (DB.get, DB.multiGet, DB.scan, DB.coprocessor); a view says only what
// differs between them. What does not differ is the store's:
// its pool, its resource groups, and its call guard (DB.enter, released
// with db.mu.RUnlock), which every view's reads take alike — a snapshot's
// own lock is taken only around each call into its Pebble snapshot.
type view interface {
	// reader is the view as Pebble iterators are opened on it: by
	// scan.NewCursor, and by a MultiGet. It is called under the call
	// guard, or by a task of the pool (which Close ends before Pebble).
	reader() scan.Reader
	// fixed reports whether every iterator reader opens sees one state (a
	// snapshot's). A read that opens iterators at different moments — a
	// split MultiGet's parts, a Coprocessor's ranges — takes a snapshot of
	// a view that is not (the live store).
	fixed() bool
	// closedOr returns ErrClosed when the view is closed — the store, or
	// the snapshot — else err: a read's own failure must not hide that.
	// Only failure paths call it.
	closedOr(err error) error
	// read is a Get's read of key: its step in the pool, or the whole Get
	// without one (under the call guard). It returns a copy of the value,
	// which the caller owns, and its expiry (0: none), or ErrNotFound —
	// for an expired key too (judged at the view's time, at); other
	// errors unworded.
	read(key []byte) ([]byte, int64, error)
	// at is the view's time, as Unix nanoseconds, at which its reads judge
	// expiry: a Snapshot's or Txn's creation, the live store's now (read
	// only when a value read has an expiry).
	at() int64
	// expiring is where the view's reads note the earliest expiry of the
	// live values they read (a Txn's: one that expires before its Commit
	// conflicts); nil when nobody asks.
	expiring() *atomic.Int64
	// cacheFor says how the row cache may answer a Get of key from the
	// view on its caller's goroutine (Get's fast path). It is asked before
	// the lookup, and again after it for cacheIfUnchanged.
	cacheFor(key []byte) cacheUse
}

// cacheUse is how a Get's fast path may use the row cache, which holds the
// newest value of each key it holds.
type cacheUse uint8

const (
	// noCache: the view's value of the key may be older than the cache's
	// (a snapshot's).
	noCache cacheUse = iota
	// ownCache: the live store's. A hit is the answer; a miss is counted,
	// and the Get's step goes straight to Pebble and puts the value it
	// reads (DB.readStorage).
	ownCache
	// cacheIfUnchanged: a Txn's. A hit is the answer if the key still has the
	// view's value (cacheFor says so again after the lookup); a miss is
	// neither counted nor filled, as the view's value may be older than
	// the cache's.
	cacheIfUnchanged
)

// The store's live state is a view: every iterator opened on it sees the
// writes completed by then.
var _ view = (*DB)(nil)

func (db *DB) reader() scan.Reader      { return db.pdb }
func (db *DB) fixed() bool              { return false }
func (db *DB) cacheFor([]byte) cacheUse { return ownCache }
func (db *DB) at() int64                { return db.now() }
func (db *DB) expiring() *atomic.Int64  { return nil }

// judged is a read's answer in v for a value val expiring at exp (0: none):
// the value, or ErrNotFound once it has expired at v's time. It notes a
// live expiry where v asks (view.expiring).
func judged(v view, val []byte, exp int64) ([]byte, int64, error) {
	return judgedAt(v, 0, val, exp)
}

// judgedAt is judged at now, a time v's read fixed at its start (0: v's
// time, asked now).
func judgedAt(v view, now int64, val []byte, exp int64) ([]byte, int64, error) {
	if exp == 0 {
		return val, 0, nil
	}
	if now == 0 {
		now = v.at()
	}
	if valfmt.Expired(exp, now) {
		return nil, 0, ErrNotFound
	}
	if e := v.expiring(); e != nil {
		valfmt.Note(e, exp)
	}
	return val, exp, nil
}

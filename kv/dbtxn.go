package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/internal/valfmt"
	"github.com/coopkv/coopkv/scan"
)

// dbTxn is the embedded store's transaction: reads through a snapshot
// taken at its start (in the read pool, as a Snapshot's), writes buffered
// in a map, and a read set that its commit is checked against (oracle.go).
type dbTxn struct {
	db *DB
	// view is what the Txn reads beneath its own writes: its snapshot,
	// as of its start.
	view txnView
	// mu guards reads.ranges: an Iterator's Close, from any goroutine,
	// narrows its scan's range to what was read.
	mu     sync.Mutex
	reads  readSet
	writes map[string]txnWrite
	bytes  int64 // keys and values in writes
	ended  bool
	// endedInLog: the commit left the oracle's log already.
	endedInLog bool
}

// txnWrite is one buffered write.
type txnWrite struct {
	val []byte
	del bool
	ttl time.Duration // SetWithTTL's, counted from the Commit
}

// NewTxn begins a transaction on the store as of now (see Txn). It fails
// with ErrClosed after Close and with ctx's error when ctx is done. On a
// read-only store the Txn may read, and its Commit fails with ErrReadOnly
// if it wrote.
func (db *DB) NewTxn(ctx context.Context) (*Txn, error) {
	if err := ctx.Err(); err != nil {
		return nil, db.closedOr(fmt.Errorf("kv: new transaction: %w", err))
	}
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	start := db.oracle.begin()
	ps := db.pdb.NewSnapshot() // after the start: see oracle.begin
	t := &dbTxn{db: db, view: txnView{snap: db.trackSnapshot(ps), start: start}}
	t.view.earliest.Store(math.MaxInt64)
	return NewTxnFrom(t), nil
}

// txnView is a Txn's snapshot as its reads see it: the snapshot's view,
// where the row cache may answer a Get as well, as DB.Get's (on the
// caller's goroutine, counted and charged by the pool), when the cached
// value is the one as of the Txn's start. A read-modify-write of a hot key
// (YCSB F) then costs no Pebble read.
type txnView struct {
	snap  *dbSnapshot
	start uint64 // the Txn's start in the oracle's log
	// earliest is the earliest expiry of the values its reads returned
	// (math.MaxInt64: none): if it comes before the Commit, the Commit
	// conflicts — an expiry is a write at its time.
	earliest atomic.Int64
}

var _ view = (*txnView)(nil)

func (v *txnView) reader() scan.Reader      { return v.snap }
func (v *txnView) fixed() bool              { return true }
func (v *txnView) closedOr(err error) error { return v.snap.closedOr(err) }
func (v *txnView) at() int64                { return v.snap.time }
func (v *txnView) expiring() *atomic.Int64  { return &v.earliest }

func (v *txnView) read(key []byte) ([]byte, int64, error) {
	val, exp, err := v.snap.readStored(key)
	if err != nil {
		return nil, 0, err
	}
	return judged(v, val, exp)
}

// cacheFor lets the row cache answer a Get of key while no write sequenced
// since the Txn's start can have written it. The cache holds the newest
// value and serves no hit while a write of the key is in flight, so a hit
// is then the start's value; asked again after the lookup, the oracle sees
// any write whose value the lookup saw (oracle.unwrittenSince).
func (v *txnView) cacheFor(key []byte) cacheUse {
	if v.snap.db.oracle.unwrittenSince(key, v.start) {
		return cacheIfUnchanged
	}
	return noCache
}

func (t *dbTxn) Get(ctx context.Context, key []byte) ([]byte, error) {
	if w, ok := t.writes[string(key)]; ok {
		if w.del {
			return nil, ErrNotFound
		}
		return append(make([]byte, 0, len(w.val)), w.val...), nil
	}
	v, err := t.db.get(ctx, &t.view, key)
	if err == nil || err == ErrNotFound {
		t.reads.addKey(key)
	}
	return v, err
}

func (t *dbTxn) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	var rest [][]byte // read from the snapshot
	var at []int      // their places in keys
	for i, k := range keys {
		if w, ok := t.writes[string(k)]; ok {
			if !w.del {
				vals[i] = append(make([]byte, 0, len(w.val)), w.val...)
			}
			continue
		}
		rest, at = append(rest, k), append(at, i)
	}
	if len(rest) == 0 {
		return vals, nil
	}
	got, err := t.db.multiGet(ctx, &t.view, rest)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		vals[i] = got[j]
		t.reads.addKey(rest[j])
	}
	return vals, nil
}

func (t *dbTxn) Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator {
	var so ScanOptions
	if opts != nil {
		so = *opts
	}
	if so.Limit < 0 {
		return &Iterator{err: errNegativeLimit}
	}
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		return &Iterator{err: scanError(start, end, ErrInvalidRange)}
	}
	start, end = cloneBounds(start, end)
	own := t.ownIn(start, end, so.Reverse)
	under := so
	if under.Limit > 0 {
		under.Limit += len(own) // enough rows however many of them own hides
	}
	u := t.db.scan(ctx, &t.view, start, end, &under)
	t.mu.Lock()
	t.reads.addRange(span{start: start, end: end})
	i := len(t.reads.ranges) - 1
	t.mu.Unlock()
	// The range counts as read whole, unless the scan stops early: then as
	// far as the last key it returned (none: nothing). Under t.mu, as
	// Close may end the scan from another goroutine.
	var last []byte
	hooks := MergeHooks{
		Row: func(key []byte, _ bool) {
			t.mu.Lock()
			last = append(last[:0], key...)
			t.mu.Unlock()
		},
		End: func(complete bool) {
			if !complete {
				t.mu.Lock()
				t.narrow(i, last, so.Reverse)
				t.mu.Unlock()
			}
		},
	}
	return NewIterator(MergeOwnWrites(u, own, so.Limit, so.Reverse, hooks), opts)
}

// ownIn returns the buffered writes in [start, end), in the scan's order.
func (t *dbTxn) ownIn(start, end []byte, reverse bool) []OwnWrite {
	var own []OwnWrite
	in := span{start: start, end: end}
	for k, w := range t.writes {
		if in.contains([]byte(k)) {
			own = append(own, OwnWrite{Key: []byte(k), Value: w.val, Delete: w.del})
		}
	}
	slices.SortFunc(own, func(a, b OwnWrite) int {
		if reverse {
			return bytes.Compare(b.Key, a.Key)
		}
		return bytes.Compare(a.Key, b.Key)
	})
	return own
}

func (t *dbTxn) Set(key, value []byte) error {
	return t.buffer(key, txnWrite{val: append(make([]byte, 0, len(value)), value...)})
}

func (t *dbTxn) Delete(key []byte) error { return t.buffer(key, txnWrite{del: true}) }

// SetWithTTL implements ExpiryTxnBackend.
func (t *dbTxn) SetWithTTL(key, value []byte, ttl time.Duration) error {
	if !t.db.tagged {
		return ErrTTLUnsupported
	}
	return t.buffer(key, txnWrite{val: append(make([]byte, 0, len(value)), value...), ttl: ttl})
}

// ExpiresAt implements ExpiryTxnBackend: its own write's expiry counts
// from now, as if it committed now.
func (t *dbTxn) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	if w, ok := t.writes[string(key)]; ok {
		switch {
		case w.del:
			return time.Time{}, ErrNotFound
		case w.ttl > 0:
			return time.Unix(0, t.db.expiryOf(w.ttl)), nil
		}
		return time.Time{}, nil
	}
	at, err := t.db.expiresAt(ctx, &t.view, key)
	if err == nil || err == ErrNotFound {
		t.reads.addKey(key)
	}
	return at, err
}

// buffer keeps w as the write of key, within MaxTxnBytes.
func (t *dbTxn) buffer(key []byte, w txnWrite) error {
	size := t.bytes + int64(len(key)+len(w.val))
	old, ok := t.writes[string(key)]
	if ok {
		size -= int64(len(key) + len(old.val))
	}
	if size > t.db.opts.MaxTxnBytes {
		return fmt.Errorf("%w: %d bytes of writes, MaxTxnBytes is %d", ErrTxnTooLarge, size, t.db.opts.MaxTxnBytes)
	}
	if t.writes == nil {
		t.writes = map[string]txnWrite{}
	}
	t.writes[string(key)] = w
	t.bytes = size
	return nil
}

func (t *dbTxn) Commit(ctx context.Context) error {
	defer t.release()
	db := t.db
	if err := ctx.Err(); err != nil {
		return db.closedOr(fmt.Errorf("kv: commit: %w", err))
	}
	if len(t.writes) == 0 {
		return nil // read-only: it saw one snapshot, it is serializable as it is
	}
	ops := make([]BatchOp, 0, len(t.writes))
	for k, w := range t.writes {
		op := BatchOp{Kind: OpSet, Key: []byte(k), Value: w.val, TTL: w.ttl}
		if w.del {
			op.Kind = OpDelete
		}
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b BatchOp) int { return bytes.Compare(a.Key, b.Key) })
	t.mu.Lock()
	reads := readSet{keys: t.reads.keys, ranges: slices.Clone(t.reads.ranges)}
	t.mu.Unlock()
	if err := db.enterWrite(); err != nil {
		return err
	}
	defer db.exitWrite(false)
	if valfmt.Expired(t.view.earliest.Load(), db.now()) {
		return ErrConflict // a value it read has expired since: written, in effect
	}
	check := txnCheck{start: t.view.start, reads: &reads}
	err := db.applyOps(ops, &check)
	t.endedInLog = check.ended // else release ends it
	if err != nil && !errors.Is(err, ErrConflict) {
		return fmt.Errorf("kv: commit: %w", err)
	}
	return err
}

func (t *dbTxn) Rollback() { t.release() }

// release ends the transaction: its snapshot and its place in the log.
func (t *dbTxn) release() {
	if t.ended {
		return
	}
	t.ended = true
	_ = t.view.snap.Close()
	if !t.endedInLog {
		t.db.oracle.end(t.view.start)
	}
	t.writes = nil
}

// narrow records, t.mu held, that the scan of range i read only up to
// last (inclusive; nil: no key at all), as it stopped before its end.
// Keys are never empty, so a last key is never nil.
func (t *dbTxn) narrow(i int, last []byte, reverse bool) {
	r := &t.reads.ranges[i]
	switch {
	case last == nil:
		*r = span{start: []byte{0}, end: []byte{0}} // empty: it saw no key
	case reverse:
		r.start = bytes.Clone(last)
	default:
		r.end = append(bytes.Clone(last), 0) // just past last
	}
}

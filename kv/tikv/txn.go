package tikv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	ckv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/transaction"

	"github.com/coopkv/coopkv/internal/valfmt"
	"github.com/coopkv/coopkv/kv"
)

// NewTxn begins an optimistic, serializable transaction (see kv.Txn) on
// one of client-go's optimistic transactions, started at a fresh
// timestamp: its reads see every write that completed before NewTxn, and
// none after.
//
// Each key the Txn reads — by Get, by MultiGet, or returned by a Scan —
// takes part in its commit's conflict check, as TiDB's SELECT … FOR
// UPDATE does in an optimistic transaction: Commit locks it (client-go's
// LockKeys; in an optimistic transaction that only marks the key in the
// memory buffer), so that it is prewritten as a lock, and TiKV refuses the
// prewrite when anyone committed the key after the Txn began. Write skew
// is therefore impossible. Unlike the embedded store, a key inserted after
// the Txn began into a range it scanned (a phantom) is not a conflict:
// only the keys a Scan returned are checked, not the range.
//
// The Txn's start timestamp is held against the store's GC until it ends.
// It fails with kv.ErrClosed after Close and with ctx's error when ctx is
// done.
func (s *Store) NewTxn(ctx context.Context) (*kv.Txn, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	// The timestamp first, bounded by ctx: client-go's Begin takes none.
	ts, err := s.now(ctx)
	if err != nil {
		return nil, fmt.Errorf("tikv: new transaction: %w", storeErr(err))
	}
	kt, err := s.kvs.Begin(tikv.WithStartTS(ts))
	if err != nil {
		return nil, fmt.Errorf("tikv: new transaction: %w", storeErr(err))
	}
	t := &txn{s: s, kt: kt, release: s.held.add(ts)}
	t.earliest.Store(math.MaxInt64)
	t.r = reader{s: s, ts: ts, open: func() bool { return !t.ended.Load() }, txn: kt, earliest: &t.earliest}
	return kv.NewTxnFrom(t), nil
}

// txn is a kv.TxnBackend on a client-go optimistic transaction. Its writes
// live in the transaction's memory buffer (prefixed keys, encoded values);
// its point reads go through the transaction, which answers from that
// buffer first; its scans read a snapshot at the start timestamp and merge
// the buffered writes of their range.
type txn struct {
	s       *Store
	kt      *transaction.KVTxn
	r       reader
	release func() // lets the start timestamp go, for GC
	ended   atomic.Bool
	bytes   int64 // the user's keys and values buffered, for MaxTxnBytes
	// earliest is the earliest expiry of the values its reads returned
	// (math.MaxInt64: none): one that comes before the Commit makes it
	// conflict, as an expiry is a write at its time.
	earliest atomic.Int64

	// mu guards read: a scan's rows may be read on another goroutine than
	// the Txn's other calls, one at a time.
	mu   sync.Mutex
	read map[string]struct{} // the user's keys read, locked at Commit
}

var (
	_ kv.TxnBackend       = (*txn)(nil)
	_ kv.ExpiryTxnBackend = (*txn)(nil)
)

// markRead adds key to the keys that Commit locks.
func (t *txn) markRead(key []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.read == nil {
		t.read = map[string]struct{}{}
	}
	t.read[string(key)] = struct{}{}
}

// Get implements kv.TxnBackend: the Txn's own write, else the snapshot's
// value. A key found missing counts as read too: inserting it is a
// conflict.
func (t *txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	v, err := t.r.Get(ctx, key)
	if err == nil || errors.Is(err, kv.ErrNotFound) {
		t.markRead(key)
	}
	return v, err
}

// MultiGet implements kv.TxnBackend with one BatchGet for the keys the
// Txn did not write.
func (t *txn) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	vals, err := t.r.MultiGet(ctx, keys)
	if err == nil {
		for _, k := range keys {
			t.markRead(k)
		}
	}
	return vals, err
}

// Scan implements kv.TxnBackend. The Txn's writes in the range are taken
// from its buffer now: a write made while the scan runs is not seen by
// it (client-go's own union iterator would be invalidated by it).
func (t *txn) Scan(ctx context.Context, start, end []byte, opts *kv.ScanOptions) *kv.Iterator {
	var so kv.ScanOptions
	if opts != nil {
		so = *opts
	}
	if so.Limit < 0 || (start != nil && end != nil && bytes.Compare(start, end) > 0) {
		return t.r.Scan(ctx, start, end, opts) // which words the error
	}
	start, end = bytes.Clone(start), bytes.Clone(end) // the rows read them later
	own, err := t.ownIn(start, end, so.Reverse)
	if err != nil {
		return kv.NewIterator(failedRows{scanErr(start, end, err)}, opts)
	}
	under := so
	if under.Limit > 0 {
		under.Limit += len(own) // enough rows however many of them own replaces
	}
	u := t.r.Scan(ctx, start, end, &under)
	// Every key the snapshot's scan returns is read; the Txn's own rows
	// are checked as its writes.
	hooks := kv.MergeHooks{Row: func(key []byte, fromSnapshot bool) {
		if fromSnapshot {
			t.markRead(key)
		}
	}}
	return kv.NewIterator(kv.MergeOwnWrites(u, own, so.Limit, so.Reverse, hooks), opts)
}

// ownIn copies the buffered writes in [start, end), in the scan's order.
func (t *txn) ownIn(start, end []byte, reverse bool) (own []kv.OwnWrite, err error) {
	lo, hi := t.s.ks.bounds(start, end)
	buf := t.kt.GetMemBuffer()
	var it tikv.Iterator
	if reverse {
		it, err = buf.IterReverse(hi, lo)
	} else {
		it, err = buf.Iter(lo, hi)
	}
	if err != nil {
		return nil, err
	}
	defer it.Close()
	for ; err == nil && it.Valid(); err = it.Next() {
		w, werr := t.ownWrite(it.Key(), it.Value())
		if werr != nil {
			return nil, werr
		}
		own = append(own, w)
	}
	return own, err
}

// ownWrite is a copy of the buffered write of k (a store key) as v.
func (t *txn) ownWrite(k, v []byte) (kv.OwnWrite, error) {
	k, err := t.s.ks.userKey(k)
	if err != nil {
		return kv.OwnWrite{}, err
	}
	w := kv.OwnWrite{Key: bytes.Clone(k), Delete: len(v) == 0} // a deletion is an empty value
	if !w.Delete {
		if v, _, err = decodeValue(k, v); err != nil { // its own TTL counts from its start: live
			return kv.OwnWrite{}, err
		}
		w.Value = bytes.Clone(v)
	}
	return w, nil
}

// Set implements kv.TxnBackend.
func (t *txn) Set(key, value []byte) error {
	return t.buffer(key, len(value), func(k []byte) error { return t.kt.Set(k, encodeValue(value, 0)) })
}

// SetWithTTL implements kv.ExpiryTxnBackend. The expiry counts from the
// Txn's start timestamp, the cluster's time, not from its commit, whose
// timestamp is not known until then: a Txn that runs for a second gives
// its keys a second less.
func (t *txn) SetWithTTL(key, value []byte, ttl time.Duration) error {
	exp := tsNanos(t.kt.StartTS()) + int64(ttl)
	t.s.wroteTTL()
	return t.buffer(key, len(value), func(k []byte) error { return t.kt.Set(k, encodeValue(value, exp)) })
}

// ExpiresAt implements kv.ExpiryTxnBackend: the Txn's own write's expiry,
// else the snapshot's. The key counts as read.
func (t *txn) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	exp, err := t.r.ExpiresAt(ctx, key)
	if err == nil || errors.Is(err, kv.ErrNotFound) {
		t.markRead(key)
	}
	return exp, err
}

// Delete implements kv.TxnBackend.
func (t *txn) Delete(key []byte) error {
	return t.buffer(key, 0, t.kt.Delete)
}

// buffer writes key (a value of vlen bytes) into the transaction's buffer
// through write, within MaxTxnBytes: an overwrite counts its new size
// only, as embedded.
func (t *txn) buffer(key []byte, vlen int, write func(k []byte) error) error {
	k := t.s.ks.key(key)
	size := t.bytes + int64(len(key)+vlen)
	if old, err := t.kt.GetMemBuffer().Get(context.Background(), k); err == nil {
		size -= int64(len(key) + max(len(old.Value)-1, 0)) // less the format byte; a deletion is empty
	}
	if size > t.s.opts.MaxTxnBytes {
		return fmt.Errorf("tikv: %w: %d bytes of writes, MaxTxnBytes is %d", kv.ErrTxnTooLarge, size, t.s.opts.MaxTxnBytes)
	}
	if err := write(k); err != nil {
		return fmt.Errorf("tikv: transaction write of %q: %w", key, err)
	}
	t.bytes = size
	return nil
}

// Commit implements kv.TxnBackend: it locks the keys read, then commits
// the client-go transaction (two-phase commit). A conflict in the prewrite
// is kv.ErrConflict, and client-go has rolled back what it prewrote by the
// time Commit returns.
func (t *txn) Commit(ctx context.Context) error {
	defer t.end()
	s := t.s
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tikv: commit: %w", err)
	}
	if t.kt.Len() == 0 {
		return nil // read-only: it read one snapshot, serializable as it is
	}
	rq, err := requestOf(ctx)
	if err != nil {
		return fmt.Errorf("tikv: commit: %w", err)
	}
	if e := t.earliest.Load(); e != math.MaxInt64 {
		// A value it read expires: if by now, that is a write since it
		// began, and the Commit conflicts.
		now, err := s.now(ctx)
		if err != nil {
			return fmt.Errorf("tikv: commit: %w", storeErr(err))
		}
		if valfmt.Expired(e, tsNanos(now)) {
			return fmt.Errorf("tikv: commit: a value read has expired since the Txn began: %w", kv.ErrConflict)
		}
	}
	rq.txn(t.kt)
	cctx, stop := t.s.clientCtx(ctx)
	defer stop()
	if err := t.kt.LockKeysWithWaitTime(cctx, ckv.LockNoWait, t.readKeys()...); err != nil {
		return fmt.Errorf("tikv: commit: locking the keys read: %w", storeErr(t.s.callErr(ctx, err)))
	}
	if err := s.commitTxn(ctx, t.kt, rq); err != nil {
		return fmt.Errorf("tikv: commit: %w", storeErr(err))
	}
	return nil
}

// readKeys returns the store's keys of the keys read.
func (t *txn) readKeys() [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([][]byte, 0, len(t.read))
	for k := range t.read {
		keys = append(keys, t.s.ks.key([]byte(k)))
	}
	return keys
}

// Rollback implements kv.TxnBackend.
func (t *txn) Rollback() { t.end() }

// end drops the transaction — an optimistic one holds nothing on TiKV
// before its commit — and lets its timestamp go; once.
func (t *txn) end() {
	if t.ended.Swap(true) {
		return
	}
	if t.kt.Valid() {
		_ = t.kt.Rollback()
	}
	t.release()
}

// commitTxn commits kt with rq's request settings and returns once
// client-go's background work for it is done: the commit of its secondary
// keys after a success, the rollback of what it prewrote after a failure.
// Until then those keys hold locks that their next reader or writer must
// wait for or resolve — the retry of a conflicting Txn first of all. (The
// store's goroutine pool, client-go's default, always starts that work.)
// When ctx is done the commit ends with ctx's error at client-go's next
// step, and commitTxn waits for nothing more: the background work goes on
// under client-go's own context. client-go sees ctx's deadline as a
// cancellation (see clientCtx).
func (s *Store) commitTxn(ctx context.Context, kt *transaction.KVTxn, rq request) error {
	var bg sync.WaitGroup
	kt.SetBackgroundGoroutineLifecycleHooks(transaction.LifecycleHooks{Pre: func() { bg.Add(1) }, Post: bg.Done})
	defer s.client.track(kt.StartTS(), rq)()
	cctx, stop := s.clientCtx(ctx)
	defer stop()
	err := kt.Commit(cctx)
	waitBackground(ctx, &bg)
	return s.callErr(ctx, err)
}

// failedRows are the rows of a scan that could not start.
type failedRows struct{ err error }

func (r failedRows) Next() ([]byte, []byte, error) { return nil, nil, r.err }
func (r failedRows) Close() error                  { return nil }

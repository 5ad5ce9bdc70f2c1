package tikv

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	tikverr "github.com/tikv/client-go/v2/error"
	ckv "github.com/tikv/client-go/v2/kv"
	"github.com/tikv/client-go/v2/txnkv/transaction"
	"github.com/tikv/client-go/v2/txnkv/txnsnapshot"

	"github.com/coopkv/coopkv/internal/valfmt"
	"github.com/coopkv/coopkv/kv"
)

// reader serves the reads of the store (ts 0: each read at a fresh
// timestamp), of a snapshot (ts: the snapshot's) and of a transaction (ts:
// its start; txn: its point reads see its own writes first).
type reader struct {
	s  *Store
	ts uint64
	// open reports whether the view is still open (a snapshot's or a
	// transaction's; nil for the store's own view).
	open func() bool
	txn  *transaction.KVTxn
	// earliest, a transaction's, is lowered to the expiry of each value
	// with a TTL its reads return: if that comes before its Commit, the
	// Commit conflicts (see txn.Commit).
	earliest *atomic.Int64
}

// live judges a value expiring at exp (0: never) read at ts: false once
// it has expired, else true, noting exp where the reader asks.
func (r reader) live(exp int64, ts uint64) bool {
	if exp == 0 {
		return true
	}
	if valfmt.Expired(exp, tsNanos(ts)) {
		return false
	}
	if r.earliest != nil {
		valfmt.Note(r.earliest, exp)
	}
	return true
}

// begin admits a read and returns its timestamp; the caller must call
// s.leave when the read is done.
func (r reader) begin(ctx context.Context) (uint64, error) {
	if err := r.s.enter(); err != nil {
		return 0, err
	}
	if r.open != nil && !r.open() {
		r.s.leave()
		return 0, kv.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		r.s.leave()
		return 0, err
	}
	if r.ts != 0 {
		return r.ts, nil
	}
	ts, err := r.s.now(ctx)
	if err != nil {
		r.s.leave()
		return 0, err
	}
	return ts, nil
}

// snapshot is a client-go snapshot at ts, carrying ctx's request
// settings. One per read: its settings are not safe to change while
// another read uses it.
func (r reader) snapshot(ctx context.Context, ts uint64) (*txnsnapshot.KVSnapshot, error) {
	req, err := requestOf(ctx)
	if err != nil {
		return nil, err
	}
	snap := r.s.kvs.GetSnapshot(ts)
	req.snapshot(snap)
	return snap, nil
}

// scanSnapshot is snapshot for a scan that k ends (killer.attach).
func (r reader) scanSnapshot(ctx context.Context, ts uint64, k *killer) (*txnsnapshot.KVSnapshot, error) {
	req, err := requestOf(ctx)
	if err != nil {
		return nil, err
	}
	snap := r.s.kvs.GetSnapshot(ts)
	req.snapshot(snap)
	k.attach(snap, req)
	return snap, nil
}

// pointGetter is what Get and MultiGet read through: a snapshot, or a
// transaction (its membuffer, then its snapshot).
type pointGetter interface {
	ckv.Getter
	ckv.BatchGetter
}

// getter returns what a point read at ts reads through, carrying ctx's
// request settings: a snapshot of its own, or r's transaction, whose one
// snapshot takes the settings of each read in turn (a transaction is for
// one goroutine, and its scans read through snapshots of their own).
func (r reader) getter(ctx context.Context, ts uint64) (pointGetter, error) {
	if r.txn == nil {
		return r.snapshot(ctx, ts)
	}
	req, err := requestOf(ctx)
	if err != nil {
		return nil, err
	}
	req.snapshot(r.txn.GetSnapshot())
	return r.txn, nil
}

// row is what a scan at ts returns of the pair k (a user key), stored: its
// value (nil with keysOnly), or ok false for a pair that is no row — the
// sweep lease (the empty key, sweep.go) or a value expired at ts.
func (r reader) row(k, stored []byte, ts uint64, keysOnly bool) (v []byte, ok bool, err error) {
	if len(k) == 0 {
		return nil, false, nil
	}
	v, exp, err := decodeValue(k, stored)
	if err != nil || !r.live(exp, ts) {
		return nil, false, err
	}
	if keysOnly {
		v = nil
	}
	return v, true, nil
}

// Get reads one key. The caller owns the result.
func (r reader) Get(ctx context.Context, key []byte) ([]byte, error) {
	v, _, err := r.getExpiry(ctx, key)
	return v, err
}

// ExpiresAt says when key expires: the zero Time when it has no TTL,
// kv.ErrNotFound when it is missing or has expired.
func (r reader) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	_, exp, err := r.getExpiry(ctx, key)
	if err != nil || exp == 0 {
		return time.Time{}, err
	}
	return time.Unix(0, exp), nil
}

// getExpiry is Get, with the value's expiry (0: none).
func (r reader) getExpiry(ctx context.Context, key []byte) ([]byte, int64, error) {
	ts, err := r.begin(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer r.s.leave()
	if len(key) == 0 {
		return nil, 0, kv.ErrEmptyKey
	}
	g, err := r.getter(ctx, ts)
	if err != nil {
		return nil, 0, err
	}
	cctx, stop := r.s.clientCtx(ctx) // a lock met is resolved with write requests
	defer stop()
	e, err := g.Get(cctx, r.s.ks.key(key))
	err = r.s.callErr(ctx, err)
	if tikverr.IsErrNotFound(err) {
		return nil, 0, kv.ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("tikv: get %q: %w", key, r.s.at(storeErr(err), r.s.ks.key(key)))
	}
	v, exp, err := decodeValue(key, e.Value)
	if err != nil {
		return nil, 0, err
	}
	if !r.live(exp, ts) {
		return nil, 0, kv.ErrNotFound
	}
	return append([]byte{}, v...), exp, nil
}

// MultiGet reads keys with one BatchGet: values[i] belongs to keys[i],
// nil when missing.
func (r reader) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	ts, err := r.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer r.s.leave()
	tkeys := make([][]byte, 0, len(keys))
	seen := make(map[string]struct{}, len(keys))
	for i, k := range keys {
		if len(k) == 0 {
			return nil, fmt.Errorf("tikv: multiget: keys[%d]: %w", i, kv.ErrEmptyKey)
		}
		tk := r.s.ks.key(k)
		if _, dup := seen[string(tk)]; !dup {
			seen[string(tk)] = struct{}{}
			tkeys = append(tkeys, tk)
		}
	}
	vals := make([][]byte, len(keys))
	if len(keys) == 0 {
		return vals, nil
	}
	g, err := r.getter(ctx, ts)
	if err != nil {
		return nil, err
	}
	cctx, stop := r.s.clientCtx(ctx) // a lock met is resolved with write requests
	defer stop()
	got, err := g.BatchGet(cctx, tkeys)
	err = r.s.callErr(ctx, err)
	if err != nil {
		return nil, fmt.Errorf("tikv: multiget of %d keys: %w", len(keys), r.s.at(storeErr(err), tkeys[0]))
	}
	for i, k := range keys {
		e, ok := got[string(r.s.ks.key(k))]
		if !ok {
			continue
		}
		v, exp, err := decodeValue(k, e.Value)
		if err != nil {
			return nil, err
		}
		if !r.live(exp, ts) {
			continue
		}
		vals[i] = append([]byte{}, v...) // repeated keys get their own
	}
	return vals, nil
}

// Scan reads [start, end) as kv.Store's Scan does. It never fails at call
// time: the first Next reads.
func (r reader) Scan(ctx context.Context, start, end []byte, opts *kv.ScanOptions) *kv.Iterator {
	var so kv.ScanOptions
	if opts != nil {
		so = *opts
	}
	rows := &rows{r: r, ctx: ctx, start: start, end: end, reverse: so.Reverse, keysOnly: so.KeysOnly, limit: so.Limit}
	switch {
	case so.Limit < 0:
		rows.err = fmt.Errorf("tikv: scan: %w %d", errNegativeLimit, so.Limit)
	case start != nil && end != nil && bytes.Compare(start, end) > 0:
		rows.err = fmt.Errorf("tikv: scan [%q, %q): %w: start after end", start, end, kv.ErrInvalidRange)
	}
	return kv.NewIterator(rows, opts)
}

// scanBatch is the rows a scan asks TiKV for at once: client-go's default
// (256), or the limit when that is smaller, so that a short scan reads no
// more than it returns.
func scanBatch(limit int) int {
	const def = txnsnapshot.DefaultScanBatchSize
	if limit > 0 && limit < def {
		return max(limit, 2) // client-go needs > 1 to skip the first key
	}
	return def
}

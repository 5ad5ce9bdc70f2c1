package tikv

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	tikverr "github.com/tikv/client-go/v2/error"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/transaction"

	"github.com/coopkv/coopkv/internal/valfmt"
	"github.com/coopkv/coopkv/kv"
)

// Removing expired keys on TiKV. Several clients may share a prefix, and
// each sweeping it all would multiply the work and the write conflicts, so
// one sweeps at a time: the holder of the sweep lease. The lease is the
// key that is the prefix itself — the store of the empty key, which no
// caller can write (kv.ErrEmptyKey) and no scan returns — whose value is
// its holder's id with an expiry of three sweep intervals. Every
// SweepInterval each store tries to take or renew it in a transaction
// that reads it first: a live lease of another's leaves it be, and two
// stores racing for a free one conflict, one winning.
//
// The holder sweeps its prefix in batches: a snapshot scan finds up to
// sweepBatch expired keys, and a transaction begun after it reads each
// again and deletes those still expired; a write since the transaction
// began conflicts, and the batch is left to the next sweep. A sweep stops
// at Close.

// sweepBatch is the most expired keys one transaction deletes; sweepScan
// the most keys one batch's scan reads; sweepIdle how long the holder goes
// without a sweep while neither its last sweep saw a key with a TTL nor
// this client wrote one (another client may have: the sweep comes then).
const (
	sweepBatch = 256
	sweepScan  = 4096
	sweepIdle  = 10 * time.Minute
)

// sweeper is a store's sweeping goroutine and its figures.
type sweeper struct {
	s    *Store
	id   []byte // the lease holder's id: the store's service id
	stop chan struct{}
	done chan struct{}
	kick chan struct{} // capacity 1: a test's "try now", beside the ticker

	passes, expired, swept, beaten atomic.Int64
	lastPass                       atomic.Int64 // Unix nanoseconds
	tries                          atomic.Int64 // times it asked for the lease
	rounds                         atomic.Int64 // tries ended, sweep included
	// sawTTL says the last sweep read a value with a TTL; wrote, that
	// this store wrote one since the last sweep began. With neither, the
	// holder sweeps only every sweepIdle: a prefix without TTLs costs a
	// scan per sweepIdle, not per SweepInterval.
	sawTTL, wrote atomic.Bool
}

func newSweeper(s *Store) *sweeper {
	w := &sweeper{s: s, id: []byte(s.serviceID), stop: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1)}
	go w.run()
	return w
}

func (w *sweeper) close() {
	close(w.stop)
	<-w.done
}

// wroteTTL tells the sweeper this store wrote a key with a TTL.
func (s *Store) wroteTTL() {
	if s.sweep != nil {
		s.sweep.wrote.Store(true)
	}
}

// SweepStats describes this store's sweeping of expired keys: Enabled
// with a positive SweepInterval; Passes, Expired, Swept and Beaten count
// its own sweeps (while another store held the lease, none).
func (s *Store) SweepStats() kv.SweepStats {
	w := s.sweep
	if w == nil {
		return kv.SweepStats{}
	}
	st := kv.SweepStats{Enabled: true, Passes: w.passes.Load(), Expired: w.expired.Load(), Swept: w.swept.Load(), Beaten: w.beaten.Load()}
	if t := w.lastPass.Load(); t != 0 {
		st.LastPass = time.Unix(0, t)
	}
	return st
}

func (w *sweeper) run() {
	defer close(w.done)
	t := time.NewTicker(w.s.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		case <-w.kick:
		}
		w.round()
		w.rounds.Add(1)
	}
}

// round is one try of the sweeper: take or renew the lease and, holding
// it, sweep if a sweep is due.
func (w *sweeper) round() {
	ctx := w.s.closingCtx // Close ends every call
	held, err := w.takeLease(ctx)
	w.tries.Add(1)
	if err != nil || !held {
		if err != nil && ctx.Err() == nil {
			w.s.opts.Logger.Debug("tikv: sweep lease", slog.Any("err", err))
		}
		return
	}
	last := time.Unix(0, w.lastPass.Load())
	if !w.wrote.Swap(false) && !w.sawTTL.Load() && w.lastPass.Load() != 0 && time.Since(last) < sweepIdle {
		return // the lease renewed; nothing known to expire
	}
	saw, err := w.pass(ctx)
	if err != nil && ctx.Err() == nil {
		w.s.opts.Logger.Warn("tikv: sweep", slog.Any("err", err))
	}
	w.sawTTL.Store(saw || err != nil)
	w.passes.Add(1)
	w.lastPass.Store(time.Now().UnixNano())
}

// takeLease takes or renews the sweep lease, unless another store holds it
// live; it reports whether this store holds it now.
func (w *sweeper) takeLease(ctx context.Context) (bool, error) {
	s := w.s
	if err := s.enter(); err != nil {
		return false, err
	}
	defer s.leave()
	ts, err := s.now(ctx)
	if err != nil {
		return false, err
	}
	kt, err := s.kvs.Begin(tikv.WithStartTS(ts))
	if err != nil {
		return false, err
	}
	defer func() {
		if kt.Valid() {
			_ = kt.Rollback()
		}
	}()
	lease := s.ks.prefix
	cctx, stop := s.clientCtx(ctx)
	defer stop()
	e, err := kt.Get(cctx, lease)
	switch {
	case tikverr.IsErrNotFound(err):
	case err != nil:
		return false, err
	default:
		holder, exp, derr := decodeValue(lease, e.Value)
		if derr == nil && !bytes.Equal(holder, w.id) && !valfmt.Expired(exp, tsNanos(ts)) {
			return false, nil // another's, live
		}
	}
	exp := tsNanos(ts) + 3*int64(s.opts.SweepInterval)
	if err := kt.Set(lease, encodeValue(w.id, exp)); err != nil {
		return false, err
	}
	if err := w.commit(ctx, kt); err != nil {
		return false, err // another took it first: a conflict
	}
	return true, nil
}

// commit commits kt with ctx's request settings.
func (w *sweeper) commit(ctx context.Context, kt *transaction.KVTxn) error {
	rq, err := requestOf(ctx)
	if err != nil {
		return err
	}
	rq.txn(kt)
	return w.s.commitTxn(ctx, kt, rq)
}

// pass sweeps the prefix once, a batch at a time; it reports whether it
// read a value with a TTL.
func (w *sweeper) pass(ctx context.Context) (saw bool, err error) {
	var from []byte // a store key; nil: the prefix's first
	for {
		select {
		case <-w.stop:
			return saw, nil
		default:
		}
		keys, next, sawTTL, err := w.find(ctx, from)
		if err != nil {
			return saw, err
		}
		saw = saw || sawTTL
		if len(keys) > 0 {
			w.delete(ctx, keys)
		}
		if next == nil {
			return saw, nil
		}
		from = next
	}
}

// find scans from from at a fresh timestamp for up to sweepBatch expired
// keys among sweepScan; it returns them (store keys), where the next batch
// starts (nil: at the end), and whether it read a value with a TTL.
func (w *sweeper) find(ctx context.Context, from []byte) (keys [][]byte, next []byte, sawTTL bool, err error) {
	s := w.s
	if err := s.enter(); err != nil {
		return nil, nil, false, err
	}
	defer s.leave()
	ts, err := s.now(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	lo, hi := s.ks.bounds(nil, nil)
	if from != nil {
		lo = from
	}
	snap := s.kvs.GetSnapshot(ts)
	it, err := snap.Iter(lo, hi)
	if err != nil {
		return nil, nil, false, err
	}
	defer it.Close()
	now := tsNanos(ts)
	for n := 0; it.Valid(); n++ {
		if len(keys) >= sweepBatch || n >= sweepScan {
			return keys, bytes.Clone(it.Key()), sawTTL, nil
		}
		if !bytes.Equal(it.Key(), s.ks.prefix) { // not the lease
			if _, exp, derr := decodeValue(it.Key(), it.Value()); derr == nil && exp != 0 {
				sawTTL = true
				if valfmt.Expired(exp, now) {
					keys = append(keys, bytes.Clone(it.Key()))
				}
			}
		}
		if err := it.Next(); err != nil {
			return nil, nil, false, err
		}
	}
	return keys, nil, sawTTL, nil
}

// delete deletes keys (store keys) found expired, in a transaction begun
// now that reads each again: a key written since the search is left, and
// a write before the commit makes the commit conflict (the batch is left
// to the next sweep).
func (w *sweeper) delete(ctx context.Context, keys [][]byte) {
	s := w.s
	if err := s.enter(); err != nil {
		return
	}
	defer s.leave()
	ts, err := s.now(ctx)
	if err != nil {
		return
	}
	kt, err := s.kvs.Begin(tikv.WithStartTS(ts))
	if err != nil {
		return
	}
	defer func() {
		if kt.Valid() {
			_ = kt.Rollback()
		}
	}()
	cctx, stop := s.clientCtx(ctx)
	defer stop()
	got, err := kt.BatchGet(cctx, keys)
	if err != nil {
		return
	}
	var del [][]byte
	for _, k := range keys {
		e, ok := got[string(k)]
		if !ok {
			continue // deleted since
		}
		if _, exp, derr := decodeValue(k, e.Value); derr != nil || !valfmt.Expired(exp, tsNanos(ts)) {
			w.beaten.Add(1) // rewritten since the search
			continue
		}
		del = append(del, k)
	}
	w.expired.Add(int64(len(del)))
	if len(del) == 0 {
		return
	}
	for _, k := range del {
		if err := kt.Delete(k); err != nil {
			return
		}
	}
	// A write of a deleted key committed after ts makes the prewrite
	// conflict: the optimistic check of every key a transaction writes.
	switch err := w.commit(ctx, kt); {
	case err == nil:
		w.swept.Add(int64(len(del)))
	case errors.Is(storeErr(err), kv.ErrConflict):
		w.beaten.Add(int64(len(del)))
	}
}

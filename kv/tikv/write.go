package tikv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	tikverr "github.com/tikv/client-go/v2/error"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/txnkv/transaction"

	"github.com/coopkv/coopkv/kv"
)

// Write applies b as one TiKV transaction: atomically, all or nothing. A
// write conflict with a concurrent Write (or another client) is retried
// with a new transaction. A batch of Sets and Deletes reads nothing, so
// the retry is blind and the last writer wins, as embedded: it retries
// until it lands, ctx ends or the store closes, and never fails for a
// conflict. A batch with a DeleteRange reads its range again on every try,
// up to Options.WriteRetries tries; then it fails with ErrWriteConflict,
// which matches kv.ErrConflict, having written nothing. A DeleteRange deletes the range's keys one by one inside the
// transaction, atomically, up to Options.MaxDeleteRangeKeys keys for the
// whole batch; past it Write fails with ErrRangeTooLarge and writes
// nothing. Write fails with ctx.Err() if ctx is done before it starts,
// and with ctx's error (wrapped) if ctx ends during its commit: nothing
// was written if it ended during the prewrite, while if it met the
// primary key's commit in flight the outcome is unknown (the package's
// README, "A commit whose context ends").
func (s *Store) Write(ctx context.Context, b *kv.Batch) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	ops, err := b.Ops()
	if err != nil {
		return fmt.Errorf("tikv: write: %w", err)
	}
	if len(ops) == 0 {
		return nil
	}
	rq, err := requestOf(ctx)
	if err != nil {
		return fmt.Errorf("tikv: write: %w", err)
	}
	ranged := slices.ContainsFunc(ops, func(op kv.BatchOp) bool { return op.Kind == kv.OpDeleteRange })
	for try := 1; ; try++ {
		err := s.writeOnce(ctx, rq, ops)
		if err == nil {
			return nil
		}
		if !retryable(err) {
			return fmt.Errorf("tikv: write: %w", s.at(storeErr(s.callErr(ctx, err)), s.ks.key(ops[0].Key)))
		}
		if ranged && try >= s.opts.WriteRetries {
			return fmt.Errorf("tikv: write: %w after %d tries (%w)", ErrWriteConflict, try, err)
		}
		// Back off for a random time under a bound that doubles with
		// every try (to 128 ms: "full jitter"), so that writers
		// conflicting on one key stop meeting.
		t := time.NewTimer(rand.N(time.Millisecond << min(try, 7)))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("tikv: write: %w", ctx.Err())
		case <-s.closingCtx.Done():
			t.Stop()
			return fmt.Errorf("tikv: write: %w", kv.ErrClosed)
		case <-t.C:
		}
	}
}

// retryable reports whether a transaction failed for a conflict that a new
// transaction may not meet.
func retryable(err error) bool {
	var latch *tikverr.ErrWriteConflictInLatch
	var retry *tikverr.ErrRetryable
	return tikverr.IsErrWriteConflict(err) || errors.As(err, &latch) || errors.As(err, &retry)
}

// writeOnce applies ops in one transaction.
func (s *Store) writeOnce(ctx context.Context, rq request, ops []kv.BatchOp) (err error) {
	// The timestamp first, bounded by ctx: client-go's Begin asks PD for
	// one on a context of its own, and waited for ever with PD gone.
	ts, err := s.now(ctx)
	if err != nil {
		return s.callErr(ctx, err)
	}
	txn, err := s.kvs.Begin(tikv.WithStartTS(ts))
	if err != nil {
		return err
	}
	rq.txn(txn)
	defer func() {
		if err != nil && txn.Valid() {
			_ = txn.Rollback()
		}
	}()
	// A DeleteRange scans its range through the transaction's snapshot,
	// whose retries and requests end with ctx or the store's Close
	// (killer); the transaction's own requests, its commit's, keep the
	// transaction's interceptor, without the end: its secondaries commit
	// after Write returns.
	var kill killer
	kill.arm(ctx, s.closingCtx)
	defer kill.disarm()
	kill.attach(txn.GetSnapshot(), rq)
	ranged := 0 // keys deleted by DeleteRanges so far
	for _, op := range ops {
		switch op.Kind {
		case kv.OpSet:
			var exp int64 // a TTL counts from the write's start timestamp, the cluster's time
			if op.TTL > 0 {
				exp = tsNanos(txn.StartTS()) + int64(op.TTL)
				s.wroteTTL()
			}
			err = txn.Set(s.ks.key(op.Key), encodeValue(op.Value, exp))
		case kv.OpDelete:
			err = txn.Delete(s.ks.key(op.Key))
		case kv.OpDeleteRange:
			err = s.deleteRange(txn, op.Key, op.Value, &ranged)
		}
		if err != nil {
			return err
		}
	}
	// Wait for the commits client-go sends in the background (the
	// secondary keys'): until they are done the keys hold locks that the
	// next reader must resolve, and they are stamped with rq only while
	// tracked.
	// client-go sees ctx's deadline as a cancellation (see clientCtx);
	// once ctx is done nothing more is waited for.
	var bg sync.WaitGroup
	txn.SetBackgroundGoroutineLifecycleHooks(transaction.LifecycleHooks{Pre: func() { bg.Add(1) }, Post: bg.Done})
	defer s.client.track(txn.StartTS(), rq)()
	cctx, stop := s.clientCtx(ctx)
	defer stop()
	if err = txn.Commit(cctx); err != nil {
		// A background commit that failed to start never calls Post:
		// waiting could last for ever.
		return s.callErr(ctx, err)
	}
	waitBackground(ctx, &bg)
	return nil
}

// deleteRange deletes every key in [start, end) that txn sees — those it
// has written itself included — counting them against the batch's bound.
func (s *Store) deleteRange(txn *transaction.KVTxn, start, end []byte, ranged *int) error {
	if len(start) == 0 {
		start = nil
	}
	lo, hi := s.ks.bounds(start, end)
	txn.GetSnapshot().SetKeyOnly(true)
	defer txn.GetSnapshot().SetKeyOnly(false)
	it, err := txn.Iter(lo, hi)
	if err != nil {
		return err
	}
	var keys [][]byte
	for ; it.Valid(); err = it.Next() {
		if err != nil {
			break
		}
		if *ranged++; *ranged > s.opts.MaxDeleteRangeKeys {
			it.Close()
			return fmt.Errorf("%w: [%s, %s) holds more than %d keys with the batch's other ranges (Options.MaxDeleteRangeKeys); nothing was written",
				ErrRangeTooLarge, bound(start, "-inf"), bound(end, "+inf"), s.opts.MaxDeleteRangeKeys)
		}
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	it.Close()
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

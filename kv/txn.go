package kv

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

var (
	// ErrConflict is returned by Txn.Commit when, since the Txn began,
	// someone wrote a key it read or a key inside a range it scanned: the
	// Txn wrote nothing, and running it again (Update does) may succeed.
	ErrConflict = errors.New("kv: transaction conflict")
	// ErrTxnDone is returned by every call on a Txn but Rollback after it
	// committed or rolled back.
	ErrTxnDone = errors.New("kv: transaction already committed or rolled back")
	// ErrTxnTooLarge is returned by Txn.Set and Txn.Delete when the Txn's
	// buffered writes (keys and values) would pass Options.MaxTxnBytes.
	// The write is not buffered; the Txn stays usable.
	ErrTxnTooLarge = errors.New("kv: transaction too large")
)

// A Txn is an optimistic, serializable read-write transaction. It reads the
// store as of NewTxn (a snapshot), sees its own writes, buffers them, and
// Commit applies them atomically — unless, since the Txn began, anyone
// (another Txn, Set, Delete, DeleteRange, Apply, Write) wrote a key that it
// read, or a key inside a range that it scanned: then Commit writes nothing
// and returns ErrConflict. Write skew is therefore impossible: two Txns
// that each read what the other writes cannot both commit.
//
// Reads run in the read pool like any other read (scheduling, resource
// groups, deadlines, ErrBusy). A Txn is for one goroutine. After Commit or
// Rollback, whatever their outcome, every call but Rollback fails with
// ErrTxnDone. Always end a Txn — defer tx.Rollback() is the idiom — as an
// open one pins its snapshot and the store's record of the writes since.
//
// Update runs a function in a Txn and retries it on conflict: most callers
// want it rather than NewTxn.
type Txn struct {
	b    TxnBackend
	done bool
}

// Get returns the value of key as the Txn sees it — its own write first,
// else the store as of NewTxn — or ErrNotFound. The caller owns the result.
func (t *Txn) Get(ctx context.Context, key []byte) ([]byte, error) {
	switch {
	case t.done:
		return nil, ErrTxnDone
	case len(key) == 0:
		return nil, ErrEmptyKey
	}
	return t.b.Get(ctx, key)
}

// MultiGet is Get of many keys at once: values[i] belongs to keys[i], nil
// when missing, as DB.MultiGet.
func (t *Txn) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	if t.done {
		return nil, ErrTxnDone
	}
	for _, k := range keys {
		if len(k) == 0 {
			return nil, ErrEmptyKey
		}
	}
	return t.b.MultiGet(ctx, keys)
}

// Scan reads [start, end) as the Txn sees it: the store as of NewTxn merged
// with the Txn's own writes, with ScanOptions as for DB.Scan. The range
// counts as read: on the embedded store, as far as the scan went when it
// stopped early (at its Limit, or closed), the whole of it otherwise.
func (t *Txn) Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator {
	if t.done {
		return &Iterator{err: ErrTxnDone}
	}
	return t.b.Scan(ctx, start, end, opts)
}

// Set buffers a write of value under key; the Txn copies both. It fails
// with ErrEmptyKey, or ErrTxnTooLarge past Options.MaxTxnBytes.
func (t *Txn) Set(key, value []byte) error {
	switch {
	case t.done:
		return ErrTxnDone
	case len(key) == 0:
		return ErrEmptyKey
	}
	return t.b.Set(key, value)
}

// SetWithTTL buffers a write of value under key that expires ttl after the
// Commit (see DB.SetWithTTL), as Set buffers a write. A ttl that is not
// positive is ErrInvalidTTL; a backend whose keys cannot expire fails it
// with ErrTTLUnsupported.
func (t *Txn) SetWithTTL(key, value []byte, ttl time.Duration) error {
	switch {
	case t.done:
		return ErrTxnDone
	case len(key) == 0:
		return ErrEmptyKey
	case ttl <= 0:
		return fmt.Errorf("%w: %v", ErrInvalidTTL, ttl)
	}
	eb, ok := t.b.(ExpiryTxnBackend)
	if !ok {
		return ErrTTLUnsupported
	}
	return eb.SetWithTTL(key, value, ttl)
}

// ExpiresAt says when key expires as the Txn sees it — its own write first
// (its expiry counted as if the Txn committed now), else the store as of
// NewTxn: the zero Time when it has no TTL, ErrNotFound when missing or
// expired. The key counts as read.
func (t *Txn) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	switch {
	case t.done:
		return time.Time{}, ErrTxnDone
	case len(key) == 0:
		return time.Time{}, ErrEmptyKey
	}
	eb, ok := t.b.(ExpiryTxnBackend)
	if !ok {
		return time.Time{}, ErrTTLUnsupported
	}
	return eb.ExpiresAt(ctx, key)
}

// Delete buffers a deletion of key, as Set buffers a write.
func (t *Txn) Delete(key []byte) error {
	switch {
	case t.done:
		return ErrTxnDone
	case len(key) == 0:
		return ErrEmptyKey
	}
	return t.b.Delete(key)
}

// Commit applies the Txn's writes atomically, or returns ErrConflict and
// writes nothing. A Txn that wrote nothing commits at once. A ctx already
// done fails the Commit with its error before anything is written. The Txn
// is done afterwards, whatever the outcome.
func (t *Txn) Commit(ctx context.Context) error {
	if t.done {
		return ErrTxnDone
	}
	t.done = true
	return t.b.Commit(ctx)
}

// Rollback drops the Txn's writes and releases it. It is idempotent, and
// does nothing after Commit.
func (t *Txn) Rollback() {
	if t.done {
		return
	}
	t.done = true
	t.b.Rollback()
}

// updateAttempts is how many times Update runs its function at most.
const updateAttempts = 10

// Update runs fn in a new Txn on s and commits it. On ErrConflict it runs
// fn again in a fresh Txn, after a jittered backoff (from 1 ms, doubling,
// at most 64 ms), until ctx ends or 10 attempts have failed, and then
// returns the last ErrConflict (or ctx's error, wrapped). An error from fn
// rolls the Txn back and is returned as it is. fn may run more than once:
// it should do nothing outside the Txn that cannot be repeated.
func Update(ctx context.Context, s Store, fn func(tx *Txn) error) error {
	var err error
	for attempt := range updateAttempts {
		if attempt > 0 {
			if werr := sleepCtx(ctx, updateBackoff(attempt)); werr != nil {
				return fmt.Errorf("kv: update: %w after %d attempts: %w", werr, attempt, err)
			}
		}
		var again bool
		if again, err = updateOnce(ctx, s, fn); !again {
			return err
		}
	}
	return err
}

// updateOnce is one attempt of Update; again reports a conflict at Commit
// (not one fn returned: fn's errors are its own).
func updateOnce(ctx context.Context, s Store, fn func(tx *Txn) error) (again bool, err error) {
	tx, err := s.NewTxn(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return false, err
	}
	err = tx.Commit(ctx)
	return errors.Is(err, ErrConflict), err
}

// updateBackoff is the wait before the given attempt (1 = the second):
// uniformly random up to 1 ms << (attempt-1), at most 64 ms, so that Txns
// that conflicted together do not meet again.
func updateBackoff(attempt int) time.Duration {
	ceiling := time.Millisecond << min(attempt-1, 6)
	return time.Duration(rand.Int64N(int64(ceiling))) + 1
}

// sleepCtx waits d, or until ctx ends (then its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package kv

import (
	"bytes"
	"fmt"
	"slices"
	"time"
)

// Batch collects writes to apply atomically with DB.Apply or DB.Write. It
// is not safe for concurrent use. Applying a batch leaves it as it was: it
// may be applied again, or Reset and filled anew. Its writes apply in the
// order they were added: a Set after a DeleteRange that covers its key
// survives it.
type Batch struct {
	ops []BatchOp
	err error // sticky until Reset: an empty key or an invalid range
}

// NewBatch returns an empty batch.
func (db *DB) NewBatch() *Batch { return &Batch{} }

// Set adds a write of value under key. The batch copies both. An empty key
// is not added, and makes Apply of the batch fail with ErrEmptyKey until
// Reset.
func (b *Batch) Set(key, value []byte) {
	if len(key) == 0 {
		b.fail(ErrEmptyKey)
		return
	}
	b.ops = append(b.ops, BatchOp{Kind: OpSet, Key: append([]byte(nil), key...), Value: append([]byte(nil), value...)})
}

// SetWithTTL adds a write of value under key that expires ttl after the
// batch is written (see DB.SetWithTTL). The batch copies both. An empty
// key or a ttl that is not positive is not added, and makes Apply of the
// batch fail with ErrEmptyKey or ErrInvalidTTL until Reset.
func (b *Batch) SetWithTTL(key, value []byte, ttl time.Duration) {
	if ttl <= 0 {
		b.fail(fmt.Errorf("%w: %v", ErrInvalidTTL, ttl))
		return
	}
	b.Set(key, value)
	if len(key) > 0 {
		b.ops[len(b.ops)-1].TTL = ttl
	}
}

// Delete adds a deletion of key. An empty key is not added, and makes Apply
// of the batch fail with ErrEmptyKey until Reset.
func (b *Batch) Delete(key []byte) {
	if len(key) == 0 {
		b.fail(ErrEmptyKey)
		return
	}
	b.ops = append(b.ops, BatchOp{Kind: OpDelete, Key: append([]byte(nil), key...)})
}

// DeleteRange adds the deletion of every key in [start, end); a nil start
// or end is open, as in Scan. The batch copies both. A start after end is
// not added, and makes Apply of the batch fail with ErrInvalidRange until
// Reset.
func (b *Batch) DeleteRange(start, end []byte) {
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		b.fail(fmt.Errorf("%w: delete range from %q to %q: start is after end", ErrInvalidRange, start, end))
		return
	}
	op := BatchOp{Kind: OpDeleteRange, Key: append([]byte{}, start...)}
	if end != nil {
		op.Value = append([]byte{}, end...)
	}
	b.ops = append(b.ops, op)
}

// fail makes the batch's Apply fail with err, the first such error kept.
func (b *Batch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Len is the number of writes in the batch, range deletions included.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch — its writes and an empty-key or invalid-range
// error — so that it can be filled again; it keeps its memory for the
// writes to come.
func (b *Batch) Reset() {
	clear(b.ops) // drop the copies of keys and values
	b.ops = b.ops[:0]
	b.err = nil
}

// openRange reports whether b deletes a range with an open end.
func (b *Batch) openRange() bool {
	for _, op := range b.ops {
		if op.Kind == OpDeleteRange && op.Value == nil {
			return true
		}
	}
	return false
}

// OpKind says what a BatchOp does.
type OpKind uint8

// The kinds of BatchOp.
const (
	OpSet         OpKind = iota // write Value under Key
	OpDelete                    // delete Key
	OpDeleteRange               // delete every key in [Key, Value)
)

// BatchOp is one write of a Batch, as Batch.Ops shows it to a backend.
type BatchOp struct {
	Kind OpKind
	// Key is the key written or deleted; for OpDeleteRange the range's
	// start, empty when open.
	Key []byte
	// Value is the value of an OpSet; for OpDeleteRange the range's end,
	// nil when open.
	Value []byte
	// TTL, when positive, makes an OpSet's key expire TTL after the write
	// (SetWithTTL); a backend counts it from when it applies the batch.
	TTL time.Duration
	// deletedSize, when positive, is the size of the value an OpDelete
	// deletes as Pebble holds it (the sweeper's deletes know it): Pebble
	// records it in the tombstone, and its compactions then reclaim the
	// space sooner.
	deletedSize uint32
}

// Ops returns the batch's writes in the order they apply, for a backend
// that applies the batch itself, or the error that makes applying it fail
// (ErrEmptyKey, ErrInvalidRange). The slice and its bytes are the batch's:
// read them, and neither keep nor change them past the Write.
func (b *Batch) Ops() ([]BatchOp, error) {
	if b.err != nil {
		return nil, b.err
	}
	return slices.Clip(b.ops), nil
}

package kv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/internal/valfmt"
	"github.com/coopkv/coopkv/scan"
)

// Keys that expire. A store created by this version or later prefixes
// every value with a tag (package valfmt), and a value with a TTL carries
// its expiry there, so that every reader — a Get, a MultiGet, the scan
// cursor, the row cache's entry — judges it where it reads the value, at
// its view's time (view.at). A store created before holds raw values: it
// reads as it always did, and refuses TTLs with ErrTTLUnsupported.
//
// Which a store holds is its Pebble comparer's name, which Pebble records
// at creation and checks at every Open: the tagged store's orders keys as
// Pebble's default does under a name of its own. So an older coopkv, or
// Pebble on its own, refuses to open a tagged store rather than read tags
// as values; and every copy of the store (a checkpoint, a backup of the
// directory) carries its format.

var (
	// ErrInvalidTTL is returned by SetWithTTL for a TTL that is not
	// positive.
	ErrInvalidTTL = errors.New("kv: invalid TTL: must be positive")
	// ErrTTLUnsupported is returned by SetWithTTL on a store created
	// before keys could expire: its values carry no room for an expiry.
	// Copy its keys into a new store to use TTLs there.
	ErrTTLUnsupported = errors.New("kv: keys cannot expire in this store: it was created before TTLs were supported")
)

// taggedComparer is the comparer of a store whose values are tagged:
// Pebble's default order, under its own name.
var taggedComparer = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Name = "coopkv.bytewise.tagged-values.v1"
	return &c
}()

// storedComparer is the name of the comparer the store whose manifest is
// manifest (its path, on fs) was created with, as Pebble checks it at Open:
// the first field of the manifest's first edit (tag 1, a length-prefixed
// string). "" when that edit starts otherwise.
func storedComparer(fs vfs.FS, manifest string) (string, error) {
	f, err := fs.Open(manifest)
	if err != nil {
		return "", err
	}
	defer f.Close()
	r, err := record.NewReader(f, 0 /* a manifest's log number */).Next()
	if err != nil {
		return "", fmt.Errorf("read manifest: %w", err)
	}
	edit, err := io.ReadAll(io.LimitReader(r, 1<<16))
	if err != nil {
		return "", fmt.Errorf("read manifest: %w", err)
	}
	const tagComparator = 1
	tag, n := binary.Uvarint(edit)
	if n <= 0 || tag != tagComparator {
		return "", nil
	}
	edit = edit[n:]
	size, n := binary.Uvarint(edit)
	if n <= 0 || size > uint64(len(edit)-n) {
		return "", nil
	}
	return string(edit[n : n+int(size)]), nil
}

// now is the store's clock, as Unix nanoseconds: Options.Clock, or the
// system's.
func (db *DB) now() int64 {
	if c := db.opts.Clock; c != nil {
		return c().UnixNano()
	}
	return time.Now().UnixNano()
}

// expiryOf is the expiry of a write of ttl (0: none) made now.
func (db *DB) expiryOf(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return db.now() + int64(ttl)
}

// SetWithTTL stores value under key, to read as missing from ttl after the
// write on (a later Set clears the TTL, a later SetWithTTL replaces it);
// the key is deleted in the background once it has expired. A ttl that is
// not positive is ErrInvalidTTL; on a store created before TTLs were
// supported it is ErrTTLUnsupported.
func (db *DB) SetWithTTL(key, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		return db.closedOr(fmt.Errorf("%w: %v", ErrInvalidTTL, ttl))
	}
	b := Batch{}
	b.SetWithTTL(key, value, ttl)
	if b.err != nil {
		return db.closedOr(b.err)
	}
	return db.Apply(&b)
}

// ExpiresAt says when key expires: the zero Time when it has no TTL,
// ErrNotFound when it is missing or has expired. It reads as Get does.
func (db *DB) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	return db.expiresAt(ctx, db, key)
}

// expiresAt is ExpiresAt of key in v.
func (db *DB) expiresAt(ctx context.Context, v view, key []byte) (time.Time, error) {
	exp, err := db.getExpiry(ctx, v, key)
	if err != nil || exp == 0 {
		return time.Time{}, err
	}
	return time.Unix(0, exp), nil
}

// encode writes into dst (storedLen bytes) val as Pebble holds it in the
// store's format: tagged with its expiry, or val itself in a store of raw
// values.
func (db *DB) encode(dst, val []byte, exp int64) {
	if db.tagged {
		valfmt.Put(dst, val, exp)
		return
	}
	copy(dst, val)
}

// storedLen is the length of a value of n bytes expiring at exp as Pebble
// holds it.
func (db *DB) storedLen(n int, exp int64) int {
	if db.tagged {
		return valfmt.Size(n, exp)
	}
	return n
}

// setIn adds a Set of key to val, expiring at exp, to pb in the store's
// format, with one copy of each.
func (db *DB) setIn(pb *pebble.Batch, key, val []byte, exp int64) {
	op := pb.SetDeferred(len(key), db.storedLen(len(val), exp))
	copy(op.Key, key)
	db.encode(op.Value, val, exp)
	_ = op.Finish() // an in-memory batch: it fails only once closed
}

// decode splits v, a value as Pebble holds it, into the caller's value (a
// slice of v) and its expiry (0: none).
func (db *DB) decode(v []byte) ([]byte, int64, error) {
	if !db.tagged {
		return v, 0, nil
	}
	val, exp, err := valfmt.Decode(v)
	if err != nil {
		return nil, 0, &corruptError{err}
	}
	return val, exp, nil
}

// judging is spec for a cursor on v: in a store of tagged values, one that
// strips the tags and judges expiry at now (0: v's time, asked now), noting
// the earliest live expiry where v asks (view.expiring).
func (db *DB) judging(v view, now int64, spec scan.Spec) scan.Spec {
	if !db.tagged {
		return spec
	}
	if now == 0 {
		now = v.at()
	}
	spec.Tagged, spec.Now, spec.Earliest = true, now, v.expiring()
	return spec
}

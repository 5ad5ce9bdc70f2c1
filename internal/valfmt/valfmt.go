// Package valfmt is how the embedded store lays a value out in Pebble
// once keys can expire: a tag byte, then for a value with a TTL its
// expiry, then the value. A value without a TTL costs one byte; one with a
// TTL nine. A store created before keys could expire holds raw values and
// never sees a tag (kv decides which a store holds, once, at Open).
//
// Expiries are Unix nanoseconds, 8 bytes big-endian; 0 means none. A
// value has expired at now when now has reached its expiry: every reader
// judges with Expired, so the rule is in one place.
package valfmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
)

const (
	tagPlain    byte = 0 // the value follows
	tagExpiring byte = 1 // an 8-byte expiry, then the value
	// expiringLen is the header of a value with a TTL.
	expiringLen = 9
)

// ErrCorrupt is a stored value whose header is not one this package
// writes: an unknown tag, or a value shorter than its header.
var ErrCorrupt = errors.New("valfmt: corrupt value header")

// Size is the length of the encoding of a value of n bytes expiring at
// exp (0: never).
func Size(n int, exp int64) int {
	if exp != 0 {
		return expiringLen + n
	}
	return 1 + n
}

// Put writes the encoding of val, expiring at exp (0: never), into dst,
// which is Size(len(val), exp) bytes long.
func Put(dst, val []byte, exp int64) {
	if exp != 0 {
		dst[0] = tagExpiring
		binary.BigEndian.PutUint64(dst[1:expiringLen], uint64(exp))
		copy(dst[expiringLen:], val)
		return
	}
	dst[0] = tagPlain
	copy(dst[1:], val)
}

// Append appends the encoding of val, expiring at exp, to dst.
func Append(dst, val []byte, exp int64) []byte {
	n := len(dst)
	dst = append(dst, make([]byte, Size(len(val), exp))...)
	Put(dst[n:], val, exp)
	return dst
}

// Decode splits enc into its value (a slice of enc) and its expiry (0:
// none).
func Decode(enc []byte) (val []byte, exp int64, err error) {
	if len(enc) > 0 && enc[0] == tagPlain {
		return enc[1:], 0, nil // the common case first
	}
	if len(enc) >= expiringLen && enc[0] == tagExpiring {
		exp = int64(binary.BigEndian.Uint64(enc[1:expiringLen]))
		if exp != 0 {
			return enc[expiringLen:], exp, nil
		}
	}
	if len(enc) == 0 {
		return nil, 0, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	return nil, 0, fmt.Errorf("%w: tag %#x, %d bytes", ErrCorrupt, enc[0], len(enc))
}

// Note lowers earliest to exp, a live value's expiry (0: none, ignored):
// how a reader that must know the earliest expiry it returned (a
// transaction's) keeps it.
func Note(earliest *atomic.Int64, exp int64) {
	if exp == 0 {
		return
	}
	for {
		cur := earliest.Load()
		if exp >= cur || earliest.CompareAndSwap(cur, exp) {
			return
		}
	}
}

// Expired reports whether a value expiring at exp (0: never) has expired
// at now: from its expiry on, it reads as missing.
func Expired(exp, now int64) bool { return exp != 0 && now >= exp }

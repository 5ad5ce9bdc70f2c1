package tikv

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tikv/client-go/v2/oracle"

	"github.com/coopkv/coopkv/internal/valfmt"
)

// A stored value is the embedded store's tagged value (package valfmt): a
// byte 0 and the value as given, or for a key with a TTL a byte 1, its
// expiry and the value. TiKV refuses empty values ("can not set nil
// value"), and client-go's snapshot cache reads an empty value as a
// missing key, so an empty value must be stored as something; the tag on
// every value keeps the format unambiguous. Stores written before TTLs
// hold only the first kind, and read as they did.
//
// Expiries are the cluster's time: the physical part of a timestamp from
// PD (tsNanos), so that every client judges them alike whatever its own
// clock says, and a read at a timestamp — a snapshot's, a Txn's —
// judges at that timestamp's time.

// tsNanos is the wall time of timestamp ts, in Unix nanoseconds.
func tsNanos(ts uint64) int64 { return oracle.ExtractPhysical(ts) * int64(time.Millisecond) }

// keyspace maps the store's keys onto TiKV's: every key under one prefix.
type keyspace struct {
	prefix []byte
	end    []byte // kv.PrefixEnd(prefix): the upper bound of every key
}

// key is k under the prefix, in a new slice.
func (ks keyspace) key(k []byte) []byte {
	b := make([]byte, 0, len(ks.prefix)+len(k))
	return append(append(b, ks.prefix...), k...)
}

// bounds maps a range of the store ([start, end), nil open) onto TiKV
// keys: always finite.
func (ks keyspace) bounds(start, end []byte) (lo, hi []byte) {
	lo, hi = ks.prefix, ks.end
	if start != nil {
		lo = ks.key(start)
	}
	if end != nil {
		hi = ks.key(end)
	}
	return lo, hi
}

// userKey is a TiKV key without the prefix (aliasing k).
func (ks keyspace) userKey(k []byte) ([]byte, error) {
	if !bytes.HasPrefix(k, ks.prefix) {
		return nil, fmt.Errorf("tikv: key %q is outside the store's prefix %q", k, ks.prefix)
	}
	return k[len(ks.prefix):], nil
}

// encodeValue is v as stored, expiring at exp (0: never).
func encodeValue(v []byte, exp int64) []byte {
	return valfmt.Append(make([]byte, 0, valfmt.Size(len(v), exp)), v, exp)
}

// decodeValue is a stored value as the store's callers see it (aliasing
// b, never nil), and its expiry (0: none).
func decodeValue(key, b []byte) ([]byte, int64, error) {
	v, exp, err := valfmt.Decode(b)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: key %q", ErrInvalidValue, key)
	}
	return v, exp, nil
}

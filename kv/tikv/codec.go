package tikv

import (
	"bytes"
	"fmt"
)

// valueFormat is the first byte of every stored value: the value follows
// as given. TiKV refuses empty values ("can not set nil value"), and
// client-go's snapshot cache reads an empty value as a missing key, so an
// empty value must be stored as something; a byte on every value keeps
// the format unambiguous, and leaves room for another format later.
const valueFormat = 0

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

// encodeValue is v as stored.
func encodeValue(v []byte) []byte {
	b := make([]byte, 0, 1+len(v))
	return append(append(b, valueFormat), v...)
}

// decodeValue is a stored value as the store's callers see it (aliasing
// b): never nil.
func decodeValue(key, b []byte) ([]byte, error) {
	if len(b) == 0 || b[0] != valueFormat {
		return nil, fmt.Errorf("%w: key %q", ErrInvalidValue, key)
	}
	return b[1:], nil
}

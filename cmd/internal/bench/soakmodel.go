package bench

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/coopkv/coopkv/coproc"
)

// The soak's model of the subset, its keys and values, and its failures
// (see soak.go).

// soakKey is one key's entry in the model.
type soakKey struct {
	// seq is odd while a write is in flight, or its value is unknown
	// after a failed write; even when val is what the store holds. Only
	// the key's writer changes it.
	seq atomic.Uint64
	// val is the key's value when seq is even; nil for no value. Stored
	// before seq turns even, so a reader that sees the same even seq
	// before and after loading it has the value of that seq.
	val atomic.Pointer[soakValue]
}

// The seqlock's transitions and reads, each in one place.

// writing marks a write of the key in flight (its writer only).
func (k *soakKey) writing() {
	if seq := k.seq.Load(); seq%2 == 0 {
		k.seq.Store(seq + 1)
	}
}

// written settles the key at v after its write succeeded (its writer
// only); a failed write leaves it odd, unknown until rewritten.
func (k *soakKey) written(v *soakValue) {
	k.val.Store(v)
	k.seq.Add(1)
}

// stamp is what a reader notes before it reads the store.
func (k *soakKey) stamp() uint64 { return k.seq.Load() }

// since returns the model's value and whether it may be checked: true
// only if no write was in flight at stamp and none ran since.
func (k *soakKey) since(stamp uint64) (*soakValue, bool) {
	v := k.val.Load()
	return v, k.seq.Load() == stamp && stamp%2 == 0
}

// known returns the model's value and whether it is known (no failed
// write left it odd); for the full check, which pauses the writers.
func (k *soakKey) known() (*soakValue, bool) {
	return k.val.Load(), k.seq.Load()%2 == 0
}

// soakValue is a value of the soak: a coprocessor row naming its key,
// with an amount the aggregates sum.
type soakValue struct {
	row    []byte
	amount int64
}

// soakModel is what the soak believes the subset holds.
type soakModel struct {
	keys []soakKey
}

func soakKeyBytes(dst []byte, n int) []byte {
	dst = append(dst, soakPrefix...)
	return fmt.Appendf(dst, "%08d", n)
}

// soakKeyNumber returns the number of key, or false if key is not one of
// the n keys of the subset.
func soakKeyNumber(key []byte, n int) (int, bool) {
	rest, ok := bytes.CutPrefix(key, []byte(soakPrefix))
	if !ok || len(rest) != 8 {
		return 0, false
	}
	i, err := strconv.Atoi(string(rest))
	if err != nil || i < 0 || i >= n {
		return 0, false
	}
	return i, true
}

// soakRange returns the bounds of keys lo … hi-1 of the subset of n.
func soakRange(lo, hi, n int) (start, end []byte) {
	start = soakKeyBytes(nil, lo)
	if hi >= n {
		return start, []byte(soakEnd)
	}
	return start, soakKeyBytes(nil, hi)
}

// decodeSoakValue checks that row is a soak row of key and returns it.
func decodeSoakValue(key, row []byte) (*soakValue, error) {
	m, err := coproc.DecodeRow(row)
	if err != nil {
		return nil, err
	}
	k, _ := m["k"].(string)
	amount, ok := m["amount"].(int64)
	if k != string(key) || !ok {
		return nil, fmt.Errorf("not a soak row of %s: k=%v amount=%v", key, m["k"], m["amount"])
	}
	return &soakValue{row: bytes.Clone(row), amount: amount}, nil
}

// soakFailure is a mismatch between the store and the model: the store
// answered what the model says it cannot hold.
type soakFailure struct {
	class class  // the class of the read that saw it
	seq   int    // its place among the phase's failures
	what  string // the read and what it got, naming the key or range
}

func (f *soakFailure) Error() string { return "soak: " + f.what }

// describeSoakValue words a value for a failure.
func describeSoakValue(v []byte, present bool) string {
	if !present {
		return "no value"
	}
	if m, err := coproc.DecodeRow(v); err == nil {
		return fmt.Sprintf("a row of %d bytes (k=%v ver=%v amount=%v)", len(v), m["k"], m["ver"], m["amount"])
	}
	if len(v) > 32 {
		return fmt.Sprintf("%d bytes %x…", len(v), v[:32])
	}
	return fmt.Sprintf("%d bytes %x", len(v), v)
}

// failure returns the first failure of the soak that the phase recorded,
// or nil: a soak phase that returns one failed — the store gave a wrong
// answer. The soak's checker records its failures, and only they, in a
// recorder of its own, so the first error of each of its classes is one.
func (p *Measured) failure() error {
	var first *soakFailure
	n := int64(0)
	for _, r := range p.recs {
		for _, cs := range r.classes {
			var f *soakFailure
			if cs != nil && errors.As(cs.firstErr, &f) {
				n += cs.errors
				if first == nil || f.seq < first.seq {
					first = f
				}
			}
		}
	}
	switch {
	case first == nil:
		return nil
	case n > 1:
		return fmt.Errorf("%w (and %d more)", first, n-1)
	}
	return first
}

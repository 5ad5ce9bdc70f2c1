package kv

import "sync/atomic"

// doorkeeper keeps a key out of the row cache until it has missed twice: a
// bit per key hash, set by the first miss, lets the second through. Reads
// spread over a large store are mostly of keys read once in a long while;
// putting each of them (a copy into the arena, a Set through ristretto's
// buffers and policy, an eviction) costs every miss and wins no hit, as
// TinyLFU's own doorkeeper (Einziger et al.) keeps them out of its sketch.
// A key read again while its bit is set is put as before.
//
// The bits are cleared once the first misses since the last clearing
// reach an eighth of them, so that a false pass (another key's bit) stays
// under one in eight and a key's bit lasts about as long as the cache
// needs to see it again. The bits are shared by all goroutines without a
// lock: a miss racing the clearing may pass or wait once more, which is a
// cache decision, never a wrong value.
type doorkeeper struct {
	bits   []atomic.Uint64
	mask   uint64 // bit index mask: len(bits)*64 - 1
	firsts atomic.Int64
	limit  int64 // firsts that clear the bits
}

// newDoorkeeper returns a doorkeeper for a cache that holds at most entries
// entries: eight bits each, a power of two, at least 4,096.
func newDoorkeeper(entries int64) *doorkeeper {
	n := int64(1 << 12)
	for n < entries*8 && n < 1<<30 {
		n <<= 1
	}
	return &doorkeeper{bits: make([]atomic.Uint64, n/64), mask: uint64(n - 1), limit: n / 8}
}

// bytes is the memory the bits take.
func (d *doorkeeper) bytes() int64 { return int64(len(d.bits)) * 8 }

// admit reports whether a key whose hash is h may be put: whether it missed
// before, since the last clearing. It marks h as seen.
func (d *doorkeeper) admit(h uint64) bool {
	i := h & d.mask
	bit := uint64(1) << (i & 63)
	if d.bits[i>>6].Or(bit)&bit != 0 {
		return true
	}
	if d.firsts.Add(1) >= d.limit {
		d.firsts.Store(0)
		for j := range d.bits {
			d.bits[j].Store(0)
		}
	}
	return false
}

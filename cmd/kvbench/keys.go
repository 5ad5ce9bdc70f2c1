package main

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// keyPrefix and keyDigits make every key the same width, so the store's
// byte order is the keys' numeric order and a scan of n keys from key i
// reads keys i … i+n-1.
const (
	keyPrefix = "user"
	keyDigits = 12
	keyLen    = len(keyPrefix) + keyDigits
)

// appendKey appends the key of number n (0 ≤ n < 10^12) to dst.
func appendKey(dst []byte, n int64) []byte {
	dst = append(dst, keyPrefix...)
	var digits [keyDigits]byte
	for i := keyDigits - 1; i >= 0; i-- {
		digits[i] = byte('0' + n%10)
		n /= 10
	}
	return append(dst, digits[:]...)
}

// newRand returns a generator for one stream of random choices: the same
// seed and stream give the same choices, whatever else runs.
func newRand(seed uint64, stream ...uint64) *rand.Rand {
	h := seed ^ 0x9e3779b97f4a7c15
	for _, s := range stream {
		h = mix64(h ^ mix64(s+0x632be59bd9b4e019))
	}
	return rand.New(rand.NewPCG(seed, h))
}

// mix64 is SplitMix64's finaliser: a cheap bijection that spreads every
// input bit over the output.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// fillValue overwrites v with random bytes: incompressible, so the store
// (and its block compression) sees the value size it was told.
func fillValue(r *rand.Rand, v []byte) {
	for i := 0; i < len(v); i += 8 {
		x := r.Uint64()
		for j := i; j < len(v) && j < i+8; j++ {
			v[j] = byte(x)
			x >>= 8
		}
	}
}

// keySpace counts the store's keys: the loaded ones, 0 … keys-1, and the
// ones inserted after them. Inserts take numbers from next, in any order;
// acked rises over every number below which all inserts have completed,
// so a reader that picks below acked never asks for a key not yet written
// (YCSB's acknowledged counter). It outlives a store reopen: the
// schedulers of one run see one growing key space.
type keySpace struct {
	next  atomic.Int64
	acked atomic.Int64

	mu   sync.Mutex
	done map[int64]bool // completed inserts at or above acked
}

func newKeySpace(loaded int64) *keySpace {
	ks := &keySpace{done: make(map[int64]bool)}
	ks.next.Store(loaded)
	ks.acked.Store(loaded)
	return ks
}

// reserve returns the number of a new key, beyond every key so far.
func (ks *keySpace) reserve() int64 { return ks.next.Add(1) - 1 }

// ack records that the insert of key n has completed (or failed: a failed
// insert is counted as an error already, and a hole would stop acked for
// good).
func (ks *keySpace) ack(n int64) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.done[n] = true
	acked := ks.acked.Load()
	for ks.done[acked] {
		delete(ks.done, acked)
		acked++
	}
	// Stored under mu, so acked only rises; readers load it without mu
	// and may see an older, smaller count, which is still safe.
	ks.acked.Store(acked)
}

// count returns how many keys, from 0, are known to exist.
func (ks *keySpace) count() int64 { return ks.acked.Load() }

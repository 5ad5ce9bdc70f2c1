package bench

import (
	"math/rand/v2"
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

// keySpace is the store's keys, 0 … n-1, the ones the load wrote: every
// workload reads among them (soak writes its own keys, apart).
type keySpace struct{ n int64 }

func newKeySpace(loaded int64) *keySpace { return &keySpace{n: loaded} }

// count returns how many keys, from 0, exist.
func (ks *keySpace) count() int64 { return ks.n }

// Key returns the key of number n (0 ≤ n < 10^12) that the load writes
// (--keys loads 0 … --keys-1), for a binary that lays out its store by
// them: kvbench-tikv splits its mock cluster's regions at some.
func Key(n int64) []byte { return appendKey(nil, n) }

package main

import (
	"math"
	"math/rand/v2"
)

// The key choosers of the YCSB core workloads, after YCSB's
// ZipfianGenerator, ScrambledZipfianGenerator and SkewedLatestGenerator.
// None is safe for concurrent use: each client goroutine has its own.

// zipfianConstant is YCSB's θ: item i is drawn with probability
// proportional to 1/(i+1)^θ.
const zipfianConstant = 0.99

// zipfian draws numbers in [0, n) with item 0 the most popular, by the
// method of Gray et al., "Quickly generating billion-record synthetic
// databases" (SIGMOD 1994), as YCSB does. n may grow between draws (as
// inserts add keys): ζ(n) is then extended incrementally, not recomputed.
type zipfian struct {
	theta float64
	alpha float64 // 1 / (1 - θ)
	zeta2 float64 // ζ(2)
	half  float64 // 0.5^θ

	n     int64   // the item count zetan and eta are for
	zetan float64 // ζ(n) = Σ_{i=1..n} 1/i^θ
	eta   float64
}

// newZipfian returns a zipfian over n ≥ 1 items with exponent θ < 1.
func newZipfian(n int64, theta float64) *zipfian {
	return newZipfianZeta(n, theta, zeta(0, n, theta, 0))
}

// newZipfianZeta is newZipfian with ζ(n) given, for item counts too large
// to sum (YCSB precomputes ζ(10^10) for its scrambled generator).
func newZipfianZeta(n int64, theta, zetan float64) *zipfian {
	z := &zipfian{
		theta: theta,
		alpha: 1 / (1 - theta),
		zeta2: zeta(0, 2, theta, 0),
		half:  math.Pow(0.5, theta),
	}
	z.setN(max(n, 1), zetan)
	return z
}

func (z *zipfian) setN(n int64, zetan float64) {
	z.n, z.zetan = n, zetan
	z.eta = (1 - math.Pow(2/float64(n), 1-z.theta)) / (1 - z.zeta2/zetan)
}

// next draws a number in [0, n).
func (z *zipfian) next(r *rand.Rand, n int64) int64 {
	n = max(n, 1)
	switch {
	case n > z.n:
		z.setN(n, zeta(z.n, n, z.theta, z.zetan))
	case n < z.n:
		z.setN(n, zeta(0, n, z.theta, 0))
	}
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 {
		return 0
	}
	if uz < 1+z.half {
		return min(1, n-1)
	}
	v := int64(float64(n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(max(v, 0), n-1)
}

// zeta returns sum + Σ_{i=from+1..to} 1/i^θ: ζ(to) when sum is ζ(from).
func zeta(from, to int64, theta, sum float64) float64 {
	for i := from + 1; i <= to; i++ {
		sum += 1 / math.Pow(float64(i), theta)
	}
	return sum
}

// scrambledItems and scrambledZeta are YCSB's: a zipfian over ten billion
// items, whose ζ(0.99) it precomputes, hashed onto the actual key range.
const (
	scrambledItems = 10_000_000_000
	scrambledZeta  = 26.46902820178302
)

// scrambledZipfian draws numbers in [0, n) with zipfian popularity, but
// with the popular items spread over the range instead of packed at its
// start, so they do not all share a few sstable blocks.
type scrambledZipfian struct{ z *zipfian }

func newScrambledZipfian() *scrambledZipfian {
	return &scrambledZipfian{z: newZipfianZeta(scrambledItems, zipfianConstant, scrambledZeta)}
}

// next draws a number in [0, n).
func (s *scrambledZipfian) next(r *rand.Rand, n int64) int64 {
	v := s.z.next(r, scrambledItems)
	return int64(fnv64(uint64(v)) % uint64(max(n, 1)))
}

// fnv64 is FNV-1a over the eight bytes of v, low byte first (YCSB's
// Utils.fnvhash64).
func fnv64(v uint64) uint64 {
	h := uint64(0xcbf29ce484222325)
	for range 8 {
		h ^= v & 0xff
		h *= 0x100000001b3
		v >>= 8
	}
	return h
}

// skewedLatest draws numbers in [0, n) favouring the newest: n-1 is the
// most popular, n-2 the next (YCSB's "latest" distribution, workload D).
type skewedLatest struct{ z *zipfian }

// newSkewedLatest returns a skewedLatest for about n items at first; it
// follows n as it grows.
func newSkewedLatest(n int64) *skewedLatest {
	return &skewedLatest{z: newZipfian(n, zipfianConstant)}
}

// next draws a number in [0, n).
func (s *skewedLatest) next(r *rand.Rand, n int64) int64 {
	n = max(n, 1)
	return n - 1 - s.z.next(r, n)
}

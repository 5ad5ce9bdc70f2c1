package main

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

const zipfDraws = 200_000

// counts draws zipfDraws numbers in [0, n) and counts each.
func counts(t *testing.T, n int64, next func(n int64) int64) []int {
	t.Helper()
	c := make([]int, n)
	for range zipfDraws {
		v := next(n)
		if v < 0 || v >= n {
			t.Fatalf("drew %d, outside [0, %d)", v, n)
		}
		c[v]++
	}
	return c
}

func TestZipfian_Skew(t *testing.T) {
	const n = 1000
	r := newRand(1)
	z := newZipfian(n, zipfianConstant)
	c := counts(t, n, func(n int64) int64 { return z.next(r, n) })
	zn := zeta(0, n, zipfianConstant, 0)
	// Gray's method is exact for items 0 and 1 and an approximation
	// beyond (YCSB's too): item 2 comes out ~20% too popular.
	for _, tc := range []struct {
		item int
		eps  float64
	}{{0, 0.03}, {1, 0.03}, {2, 0.25}, {3, 0.25}, {9, 0.25}, {99, 0.25}} {
		want := zipfDraws / math.Pow(float64(tc.item+1), zipfianConstant) / zn
		assert.InEpsilon(t, want, float64(c[tc.item]), tc.eps, "item %d", tc.item)
	}
	assert.Greater(t, c[0], c[1])
	assert.Greater(t, c[1], c[10])
	assert.Greater(t, c[10], c[500])
}

func TestZipfian_SmallAndGrowing(t *testing.T) {
	r := newRand(2)
	z := newZipfian(1, zipfianConstant)
	for range 100 {
		assert.Zero(t, z.next(r, 1))
	}
	c := counts(t, 2, func(n int64) int64 { return z.next(r, n) })
	assert.Greater(t, c[0], c[1])

	// Growing n extends ζ(n) incrementally; it must match a fresh sum.
	z = newZipfian(100, zipfianConstant)
	z.next(r, 5000)
	assert.InDelta(t, zeta(0, 5000, zipfianConstant, 0), z.zetan, 1e-9)
	assert.Equal(t, int64(5000), z.n)
	z.next(r, 50) // and shrinking recomputes
	assert.InDelta(t, zeta(0, 50, zipfianConstant, 0), z.zetan, 1e-9)
}

func TestZipfian_Seeded(t *testing.T) {
	draw := func() []int64 {
		r := newRand(9, 1)
		z := newScrambledZipfian()
		var out []int64
		for range 20 {
			out = append(out, z.next(r, 1_000_000))
		}
		return out
	}
	assert.Equal(t, draw(), draw())
}

func TestScrambledZipfian_SkewedButSpread(t *testing.T) {
	const n = 10_000
	r := newRand(3)
	z := newScrambledZipfian()
	c := counts(t, n, func(n int64) int64 { return z.next(r, n) })

	// Skewed: the hottest 1% of keys take a large share of the draws.
	sorted := slices.Clone(c)
	slices.Sort(sorted)
	slices.Reverse(sorted)
	top := 0
	for _, v := range sorted[:n/100] {
		top += v
	}
	// ζ(100)/ζ(10^10) ≈ 19% of the draws go to the 100 hottest of the
	// ten billion items YCSB scrambles from.
	assert.Greater(t, top, zipfDraws*15/100, "the hottest 1 percent of keys get over 15 percent of the draws")

	// Spread: each tenth of the key range gets a fair part of the draws,
	// not just the first.
	for d := range 10 {
		part := 0
		for _, v := range c[d*n/10 : (d+1)*n/10] {
			part += v
		}
		assert.Greater(t, part, zipfDraws/40, "tenth %d", d)
	}
}

func TestSkewedLatest_FavoursNewest(t *testing.T) {
	const n = 1000
	r := newRand(4)
	s := newSkewedLatest(n)
	c := counts(t, n, func(n int64) int64 { return s.next(r, n) })
	assert.Greater(t, c[n-1], c[n-2])
	assert.Greater(t, c[n-2], c[n-100])
	assert.Greater(t, c[n-100], c[0])

	// As keys are added, the newest one becomes the hottest.
	c = counts(t, n+500, func(n int64) int64 { return s.next(r, n) })
	assert.Equal(t, n+499, slices.Index(c, slices.Max(c)))
}

package hist

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBucket_UpperBoundsValue(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := r.Uint64() >> uint(r.IntN(64))
		b := bucket(v)
		require.Less(t, b, nBuckets)
		assert.LessOrEqual(t, v, upper(b), "value %d bucket %d", v, b)
		if b > 0 {
			assert.Greater(t, v, upper(b-1), "value %d bucket %d", v, b)
		}
	}
}

func TestSummary_QuantilesWithinPrecision(t *testing.T) {
	var h Histogram
	r := rand.New(rand.NewPCG(3, 4))
	vals := make([]time.Duration, 0, 50000)
	for range 50000 {
		v := time.Duration(r.ExpFloat64() * float64(time.Millisecond))
		vals = append(vals, v)
		h.Record(v)
	}
	slices.Sort(vals)
	s := h.Summary()
	require.EqualValues(t, len(vals), s.Count)
	assert.Equal(t, vals[len(vals)-1], s.Max)
	for _, c := range []struct {
		got  time.Duration
		want time.Duration
	}{{s.P50, vals[len(vals)/2]}, {s.P99, vals[len(vals)*99/100]}} {
		assert.InEpsilon(t, float64(c.want), float64(c.got), 0.13)
	}
}

func TestRecord_ConcurrentAndMerge(t *testing.T) {
	var a, b Histogram
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 1000 {
				a.Record(time.Duration(i*1000 + j))
			}
		})
	}
	wg.Wait()
	b.Record(-5)
	b.Merge(&a)
	s := b.Summary()
	assert.EqualValues(t, 4001, s.Count)
	assert.Equal(t, time.Duration(3999), s.Max)
	var empty Histogram
	es := empty.Summary()
	assert.Zero(t, es.Count)
	assert.Zero(t, es.P99)
	assert.Equal(t, make([]uint64, len(PowerOfTwoBounds)), es.Below)
}

func TestBelow_CountsExactlyAtPowerOfTwoBounds(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{0, 1023, 1024, 1025, 2047, 2048, 5000, time.Second, 40 * time.Second} {
		h.Record(d)
	}
	got := h.Summary().Below
	require.Len(t, got, len(PowerOfTwoBounds))
	assert.Equal(t, time.Duration(1024), PowerOfTwoBounds[0])
	assert.EqualValues(t, 2, got[0], "below 1024 ns: 0 and 1023")
	assert.EqualValues(t, 5, got[1], "below 2048 ns")
	assert.EqualValues(t, 6, got[2], "below 4096 ns")
	assert.EqualValues(t, 7, got[3], "below 8192 ns")
	assert.EqualValues(t, 8, got[len(got)-1], "below 2^34 ns: all but the 40 s one")
	s := h.Summary()
	assert.EqualValues(t, 9, s.Count)
	assert.Equal(t, 0+1023+1024+1025+2047+2048+5000+time.Second+40*time.Second, s.Sum)
}

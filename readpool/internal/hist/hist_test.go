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
	assert.Equal(t, Summary{}, empty.Summary())
}

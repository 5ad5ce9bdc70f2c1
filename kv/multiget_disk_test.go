package kv

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMultiGetParts(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []int
	}{
		{n: 0},
		{n: 1},
		{n: 7}, // a second part would read 3 keys
		{n: 8, want: []int{0, 4, 8}},
		{n: 9, want: []int{0, 4, 9}},
		{n: 15, want: []int{0, 5, 10, 15}},
		{n: 16, want: []int{0, 4, 8, 12, 16}},
		{n: 64, want: []int{0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64}},
		{n: 100, want: []int{0, 6, 12, 18, 25, 31, 37, 43, 50, 56, 62, 68, 75, 81, 87, 93, 100}},
		{n: 1000, want: []int{0, 62, 125, 187, 250, 312, 375, 437, 500, 562, 625, 687, 750, 812, 875, 937, 1000}},
	} {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			assert.Equal(t, c.want, multiGetParts(c.n))
		})
	}
}

// Every split covers the keys once, in parts of minPartKeys or more that
// differ by one key at most, never more than maxParts of them.
func TestMultiGetParts_Bounds(t *testing.T) {
	for n := range 5000 {
		b := multiGetParts(n)
		if b == nil {
			require.Less(t, n, 2*minPartKeys, "n=%d", n)
			continue
		}
		k := len(b) - 1
		require.Equal(t, 0, b[0], "n=%d", n)
		require.Equal(t, n, b[k], "n=%d", n)
		require.LessOrEqual(t, k, maxParts, "n=%d", n)
		lo, hi := n, 0
		for i := range k {
			size := b[i+1] - b[i]
			lo, hi = min(lo, size), max(hi, size)
		}
		require.GreaterOrEqual(t, lo, minPartKeys, "n=%d", n)
		require.LessOrEqual(t, hi-lo, 1, "n=%d", n)
	}
}

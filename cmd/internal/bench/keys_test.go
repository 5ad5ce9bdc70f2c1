package bench

import (
	"bytes"
	"compress/flate"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendKey_FixedWidthInNumericOrder(t *testing.T) {
	nums := []int64{0, 1, 9, 10, 99, 100, 12345, 999_999_999_999}
	var keys [][]byte
	for _, n := range nums {
		k := appendKey(nil, n)
		assert.Len(t, k, keyLen)
		assert.Equal(t, fmt.Sprintf("user%012d", n), string(k))
		keys = append(keys, k)
	}
	assert.True(t, slices.IsSortedFunc(keys, bytes.Compare), "byte order is numeric order")
	assert.Equal(t, "xuser000000000007", string(appendKey([]byte("x"), 7)), "appends")
}

func TestNewRand_Streams(t *testing.T) {
	draw := func(r *rand.Rand) []uint64 { return []uint64{r.Uint64(), r.Uint64(), r.Uint64()} }
	assert.Equal(t, draw(newRand(7, 1, 2)), draw(newRand(7, 1, 2)), "same seed and stream, same choices")
	assert.NotEqual(t, draw(newRand(7, 1, 2)), draw(newRand(7, 2, 1)))
	assert.NotEqual(t, draw(newRand(7, 1)), draw(newRand(8, 1)))
	assert.NotEqual(t, draw(newRand(7)), draw(newRand(7, 0)))
}

func TestFillValue_Incompressible(t *testing.T) {
	v := make([]byte, 64<<10+3)
	fillValue(newRand(1), v)
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, flate.BestCompression)
	require.NoError(t, err)
	_, err = w.Write(v)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Greater(t, buf.Len(), len(v)*99/100, "random bytes do not compress")
	assert.NotZero(t, v[len(v)-1], "the tail is filled too") // 1 in 256 to fail: seeded, so it does not

	w1, w2 := make([]byte, 100), make([]byte, 100)
	fillValue(newRand(3), w1)
	fillValue(newRand(3), w2)
	assert.Equal(t, w1, w2, "seeded")
}

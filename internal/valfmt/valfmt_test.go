package valfmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	for _, c := range []struct {
		val []byte
		exp int64
	}{
		{nil, 0},
		{[]byte{}, 0},
		{[]byte("v"), 0},
		{[]byte{tagExpiring, 1, 2}, 0}, // a value that looks like a header
		{nil, 1},
		{[]byte("v"), 1},
		{[]byte("value"), math.MaxInt64},
		{[]byte{tagPlain}, -5}, // before 1970: kept as given
	} {
		enc := Append([]byte("prefix"), c.val, c.exp)
		require.Len(t, enc, len("prefix")+Size(len(c.val), c.exp))
		val, exp, err := Decode(enc[len("prefix"):])
		require.NoError(t, err)
		assert.Equal(t, string(c.val), string(val))
		assert.Equal(t, c.exp, exp)
	}
}

func TestSize_PlainCostsOneByte(t *testing.T) {
	assert.Equal(t, 101, Size(100, 0))
	assert.Equal(t, 109, Size(100, 42))
}

func TestDecode_Corrupt(t *testing.T) {
	for _, enc := range [][]byte{
		nil,
		{},
		{2, 'v'},                  // unknown tag
		{tagExpiring, 0, 0, 0, 1}, // shorter than its expiry
		{tagExpiring, 0, 0, 0, 0, 0, 0, 0, 0, 'v'}, // expiry 0 is never written
	} {
		_, _, err := Decode(enc)
		assert.ErrorIs(t, err, ErrCorrupt, "%x", enc)
	}
}

func TestExpired(t *testing.T) {
	assert.False(t, Expired(0, math.MaxInt64), "no TTL never expires")
	assert.False(t, Expired(100, 99))
	assert.True(t, Expired(100, 100), "expired from its expiry on")
	assert.True(t, Expired(100, 101))
}

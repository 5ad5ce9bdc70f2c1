package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// TestValueMaker_RowsHoldTheValueSize checks that rows decode, hold
// columns in their ranges, and are --value-size bytes long, also where
// the pad's length prefix grows (past 255 and 65,535 bytes); a size too
// small for the columns gets rows of the columns alone.
func TestValueMaker_RowsHoldTheValueSize(t *testing.T) {
	for _, size := range []int{100, 290, 300, 1000, 70_000, 10} {
		m := newValueMaker(true, size)
		r := newRand(1, uint64(size))
		for range 200 {
			v, err := m.next(r)
			require.NoError(t, err)
			if size >= 64 {
				require.Len(t, v, size)
			} else {
				require.Less(t, len(v), 64)
			}
			row, err := coproc.DecodeRow(v)
			require.NoError(t, err)
			assert.Contains(t, regionNames, row["region"])
			amount, ok := row["amount"].(int64)
			require.True(t, ok, "%T", row["amount"])
			assert.True(t, 0 <= amount && amount < rowMaxAmount, amount)
			ts, ok := row["ts"].(int64)
			require.True(t, ok, "%T", row["ts"])
			assert.True(t, rowTSBase <= ts && ts < rowTSBase+rowTSSpan, ts)
			assert.IsType(t, []byte(nil), row["pad"])
		}
	}
}

func TestValueMaker_RandomBytes(t *testing.T) {
	m := newValueMaker(false, 100)
	v, err := m.next(newRand(1))
	require.NoError(t, err)
	assert.Len(t, v, 100)
	_, err = coproc.DecodeRow(v)
	assert.Error(t, err, "random bytes, not a row")

	w := make([]byte, 100)
	fillValue(newRand(1), w)
	assert.Equal(t, w, v, "the values of a run without rows are as before")
}

package scan

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sliceRows serves n rows "r0000", "r0001", … (or descending), then err
// (nil = io.EOF), reusing one key buffer as a backend may.
type sliceRows struct {
	keys   []string
	i      int
	err    error
	buf    []byte
	closes int
}

func newSliceRows(n int, reverse bool, err error) *sliceRows {
	r := &sliceRows{err: err}
	for i := range n {
		j := i
		if reverse {
			j = n - 1 - i
		}
		r.keys = append(r.keys, fmt.Sprintf("r%04d", j))
	}
	return r
}

func (r *sliceRows) Next() ([]byte, []byte, error) {
	if r.closes > 0 {
		return nil, nil, io.EOF
	}
	if r.i == len(r.keys) {
		if r.err != nil {
			return nil, nil, r.err
		}
		return nil, nil, io.EOF
	}
	r.buf = append(r.buf[:0], r.keys[r.i]...)
	r.i++
	return r.buf, []byte("v" + string(r.buf)), nil
}

func (r *sliceRows) Close() error { r.closes++; return nil }

func TestCursorOver_RowsInGrowingBatchesWithLimitAndKeysOnly(t *testing.T) {
	rows := newSliceRows(3000, true, nil)
	c, err := NewCursorOver(rows, Spec{Reverse: true, Limit: 2500, KeysOnly: true})
	require.NoError(t, err)
	var b Batch
	var sizes []int
	n := 0
	for !c.Done() {
		got, _, err := c.Fill(&b)
		require.NoError(t, err)
		assert.EqualValues(t, b.Len(), got)
		sizes = append(sizes, b.Len())
		for i := range b.Len() {
			require.Equal(t, fmt.Sprintf("r%04d", 2999-n-i), string(b.Key(i)), "copied out of the reused buffer")
			require.Empty(t, b.Value(i), "keys only")
		}
		n += b.Len()
	}
	assert.Equal(t, 2500, n, "the limit")
	assert.Equal(t, []int{32, 64, 128, 256, 512, 1024, 484}, sizes, "as from Pebble")
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	assert.Equal(t, 1, rows.closes, "closed once")
}

func TestCursorOver_RowsErrorEndsTheFill(t *testing.T) {
	boom := errors.New("region unavailable")
	c, err := NewCursorOver(newSliceRows(10, false, boom), Spec{})
	require.NoError(t, err)
	defer c.Close()
	var b Batch
	_, _, err = c.Fill(&b)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, 10, b.Len(), "the rows before the error")
	assert.Equal(t, "vr0009", string(b.Value(9)))
}

func TestCursorOver_InvalidSpecClosesTheRows(t *testing.T) {
	rows := newSliceRows(1, false, nil)
	_, err := NewCursorOver(rows, Spec{Start: []byte("b"), End: []byte("a")})
	require.ErrorIs(t, err, ErrInvalidRange)
	assert.Equal(t, 1, rows.closes)
}

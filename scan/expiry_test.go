package scan

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/internal/valfmt"
)

// openTagged writes n rows of tagged values: row i expires at i+1 when
// expiring(i), else never; its value is its key.
func openTagged(t *testing.T, n int, expiring func(i int) bool) *pebble.DB {
	t.Helper()
	db := memPebble(t)
	b := db.NewBatch()
	for i := range n {
		k := fmt.Appendf(nil, "k%06d", i)
		var exp int64
		if expiring(i) {
			exp = int64(i + 1)
		}
		require.NoError(t, b.Set(k, valfmt.Append(nil, k, exp), nil))
	}
	require.NoError(t, b.Commit(pebble.NoSync))
	return db
}

// readCursor reads spec from db a batch at a time: the keys, and each
// batch's size.
func readCursor(t *testing.T, db *pebble.DB, spec Spec) (keys []string, sizes []int) {
	t.Helper()
	c, err := NewCursor(db, spec)
	require.NoError(t, err)
	defer c.Close()
	var b Batch
	for !c.Done() {
		_, _, err := c.Fill(&b)
		require.NoError(t, err)
		sizes = append(sizes, b.Len())
		for i := range b.Len() {
			keys = append(keys, string(b.Key(i)))
			if !spec.KeysOnly {
				assert.Equal(t, string(b.Key(i)), string(b.Value(i)), "the value without its tag")
			} else {
				assert.Empty(t, b.Value(i))
			}
		}
		require.Less(t, len(sizes), 10_000, "the cursor ends")
	}
	return keys, sizes
}

// A tagged cursor returns the rows live at Now, without their tags, in
// either order, with or without values; Limit counts live rows only.
func TestCursor_TaggedSkipsExpiredRows(t *testing.T) {
	db := openTagged(t, 100, func(i int) bool { return i%2 == 1 }) // odd rows expire at i+1
	var live []string
	for i := range 100 {
		if i%2 == 0 || i+1 > 50 { // at Now=50, odd rows up to 49 have expired
			live = append(live, fmt.Sprintf("k%06d", i))
		}
	}
	got, _ := readCursor(t, db, Spec{Tagged: true, Now: 50})
	assert.Equal(t, live, got)
	got, _ = readCursor(t, db, Spec{Tagged: true, Now: 50, KeysOnly: true})
	assert.Equal(t, live, got)
	got, _ = readCursor(t, db, Spec{Tagged: true, Now: 50, Reverse: true})
	require.Len(t, got, len(live))
	assert.Equal(t, live[len(live)-1], got[0])
	got, _ = readCursor(t, db, Spec{Tagged: true, Now: 50, Limit: 30})
	assert.Equal(t, live[:30], got, "Limit counts the live rows")

	earliest := &atomic.Int64{}
	earliest.Store(math.MaxInt64)
	_, _ = readCursor(t, db, Spec{Tagged: true, Now: 50, Earliest: earliest})
	assert.EqualValues(t, 52, earliest.Load(), "the earliest live expiry: row 51's")
}

// A range of expired rows ends each batch at the batch's size, empty, so
// that a step's work stays bounded; the scan goes on to the live rows.
func TestCursor_TaggedExpiredRangeEndsBatches(t *testing.T) {
	db := openTagged(t, 5000, func(i int) bool { return i < 4990 })
	got, sizes := readCursor(t, db, Spec{Tagged: true, Now: math.MaxInt64})
	assert.Len(t, got, 10)
	assert.Equal(t, 0, sizes[0], "the first batch read only expired rows")
	assert.Greater(t, len(sizes), 3, "several batches")
	for _, s := range sizes {
		assert.LessOrEqual(t, s, MaxBatchRows)
	}
}

// A corrupt tag is the scan's error, naming the key.
func TestCursor_TaggedCorruptValue(t *testing.T) {
	db := memPebble(t)
	require.NoError(t, db.Set([]byte("bad"), []byte{7, 'x'}, pebble.NoSync))
	c, err := NewCursor(db, Spec{Tagged: true, Now: 1})
	require.NoError(t, err)
	defer c.Close()
	_, _, err = c.Fill(&Batch{})
	assert.ErrorIs(t, err, valfmt.ErrCorrupt)
	assert.ErrorContains(t, err, `"bad"`)
}

package kv_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

// TestMergeOwnWrites: a snapshot's rows merged with a transaction's own
// writes — a write replaces the row of its key, a deletion hides it, its
// new keys fall in order — with the hooks told each row and how the scan
// ended.
func TestMergeOwnWrites(t *testing.T) {
	snapshot := [][2]string{{"a", "1"}, {"c", "3"}, {"e", "5"}}
	own := []kv.OwnWrite{{Key: []byte("b"), Value: []byte("B")}, {Key: []byte("c"), Value: []byte("C")}, {Key: []byte("e"), Delete: true}, {Key: []byte("f"), Value: []byte("F")}}
	run := func(limit int, closeAfter int) (rows []string, fromSnapshot []bool, ends []bool) {
		hooks := kv.MergeHooks{
			Row: func(_ []byte, s bool) { fromSnapshot = append(fromSnapshot, s) },
			End: func(complete bool) { ends = append(ends, complete) },
		}
		under := kv.NewIterator(&sliceRows{pairs: snapshot}, nil)
		it := kv.NewIterator(kv.MergeOwnWrites(under, own, limit, false, hooks), nil)
		for it.Next() {
			rows = append(rows, string(it.Key())+"="+string(it.Value()))
			if len(rows) == closeAfter {
				break
			}
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		return rows, fromSnapshot, ends
	}
	rows, from, ends := run(0, -1)
	assert.Equal(t, []string{"a=1", "b=B", "c=C", "f=F"}, rows)
	assert.Equal(t, []bool{true, false, false, false}, from, "c's row is the Txn's write")
	assert.Equal(t, []bool{true}, ends, "read to its end: complete, once (Close after says nothing)")

	rows, _, ends = run(2, -1)
	assert.Equal(t, []string{"a=1", "b=B"}, rows)
	assert.Equal(t, []bool{false}, ends, "stopped at its Limit")

	rows, _, ends = run(0, 1)
	assert.Equal(t, []string{"a=1"}, rows)
	assert.Equal(t, []bool{false}, ends, "closed early")
}

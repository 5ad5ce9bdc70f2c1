package kv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// checkSnapshotView checks what every read through s must see of the store
// as it was: a, b, c1 and c2 hold row 1, "new" is missing.
func checkSnapshotView(t *testing.T, s *Snapshot) {
	t.Helper()
	ctx := context.Background()
	one := string(snapRow(t, 1))
	for _, k := range []string{"a", "b", "c1", "c2"} {
		v, err := s.Get(ctx, []byte(k))
		require.NoError(t, err, k)
		assert.Equal(t, one, string(v), "Get %s", k)
	}
	_, err := s.Get(ctx, []byte("new"))
	assert.ErrorIs(t, err, ErrNotFound, "a key written after the snapshot")

	vals, err := s.MultiGet(ctx, [][]byte{[]byte("new"), []byte("c2"), []byte("a"), []byte("b")})
	require.NoError(t, err)
	assert.Nil(t, vals[0])
	assert.Equal(t, []string{one, one, one}, []string{string(vals[1]), string(vals[2]), string(vals[3])})

	it := s.Scan(ctx, nil, nil, nil)
	var keys []string
	for k, v := range it.All() {
		keys = append(keys, string(k))
		assert.Equal(t, one, string(v), "Scan %s", k)
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	assert.Equal(t, []string{"a", "b", "c1", "c2"}, keys)

	resp, err := s.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "v", As: "sum"}}})
	require.NoError(t, err)
	require.Len(t, resp.Rows, 1)
	assert.EqualValues(t, 4, resp.Rows[0]["n"], "Coprocessor")
	assert.EqualValues(t, 4, resp.Rows[0]["sum"], "Coprocessor")
}

func snapRow(t *testing.T, v int64) []byte {
	t.Helper()
	row, err := coproc.EncodeRow(map[string]any{"v": v})
	require.NoError(t, err)
	return row
}

func TestSnapshot_IsolatedFromLaterWrites(t *testing.T) {
	forEachScheduler(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		for _, k := range []string{"a", "b", "c1", "c2"} {
			require.NoError(t, db.Set([]byte(k), snapRow(t, 1)))
			_, err := db.Get(ctx, []byte(k)) // cached: the snapshot reads past the cache
			require.NoError(t, err)
		}
		s, err := db.NewSnapshot(ctx)
		require.NoError(t, err)
		defer func() { assert.NoError(t, s.Close()) }()

		require.NoError(t, db.Set([]byte("a"), snapRow(t, 2)))
		require.NoError(t, db.Delete([]byte("b")))
		require.NoError(t, db.DeleteRange([]byte("c"), []byte("d")))
		require.NoError(t, db.Set([]byte("new"), snapRow(t, 2)))
		v, err := db.Get(ctx, []byte("a"))
		require.NoError(t, err)
		require.Equal(t, snapRow(t, 2), v, "the store moved on")

		checkSnapshotView(t, s)
	})
}

func TestSnapshot_CloseAndDBClose(t *testing.T) {
	ctx := context.Background()
	db, err := Open("", &Options{InMemory: true, NoSync: true})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v")))

	s, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "idempotent")
	_, err = s.Get(ctx, []byte("k"))
	assert.ErrorIs(t, err, ErrClosed)
	_, err = s.Get(ctx, nil)
	assert.ErrorIs(t, err, ErrClosed, "closed comes first")
	_, err = s.MultiGet(ctx, [][]byte{[]byte("k")})
	assert.ErrorIs(t, err, ErrClosed)
	it := s.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), ErrClosed)
	require.NoError(t, it.Close())
	_, err = s.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}})
	assert.ErrorIs(t, err, ErrClosed)

	// DB.Close closes the snapshots and iterators left open.
	load(t, db, 20000, func(i int) []byte { return keyN(i) }) // more than a scan buffers
	s1, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	s2, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	open := s2.Scan(ctx, nil, nil, nil)
	require.True(t, open.Next())
	require.NoError(t, db.Close(), "Pebble reports leaked snapshots and iterators here")
	_, err = s1.Get(ctx, []byte("k"))
	assert.ErrorIs(t, err, ErrClosed)
	rows := 1
	for open.Next() { // what it had buffered before the Close
		rows++
	}
	assert.Less(t, rows, 20001, "the scan ended before its range did")
	assert.ErrorIs(t, open.Err(), ErrClosed)
	assert.NoError(t, open.Close())
	assert.NoError(t, s1.Close())
	assert.NoError(t, s2.Close())
	_, err = db.NewSnapshot(ctx)
	assert.ErrorIs(t, err, ErrClosed)
}

// Snapshots taken while transfers run each see one total, read twice
// through every kind of read while the transfers go on.
func TestSnapshot_DuringTransfers(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSync: true})
	_, _, stop := startTransfers(t, db, 11, 0)
	defer stop()
	ctx := context.Background()
	for range 5 {
		s, err := db.NewSnapshot(ctx)
		require.NoError(t, err)
		var first []byte
		for range 2 {
			vals, err := s.MultiGet(ctx, bankKeys())
			require.NoError(t, err)
			var sum int64
			for _, v := range vals {
				bal, err := bankBalance(v)
				require.NoError(t, err)
				sum += bal
			}
			assert.Equal(t, int64(bankTotal), sum, "MultiGet through a snapshot")

			sum, rows := int64(0), 0
			it := s.Scan(ctx, bankStart, bankEnd, nil)
			for _, v := range it.All() {
				bal, err := bankBalance(v)
				require.NoError(t, err)
				sum += bal
				rows++
			}
			require.NoError(t, it.Close())
			assert.Equal(t, bankAccounts, rows)
			assert.Equal(t, int64(bankTotal), sum, "Scan through a snapshot")

			v, err := s.Get(ctx, bankKey(7))
			require.NoError(t, err)
			if first == nil {
				first = v
			}
			assert.Equal(t, first, v, "two Gets of one snapshot agree while writes go on")
		}
		require.NoError(t, s.Close())
	}
}

package tikv

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// TestScan_EmptyRangeAtARegionBoundary reads [k, k) at every region
// boundary, both ways, by Scan, a Txn's Scan and the coprocessor (region
// by region and region-parallel): no rows, no error. A reverse scanner
// over it asked the region before the boundary for keys from the
// boundary, outside that region (the mock cluster panicked).
func TestScan_EmptyRangeAtARegionBoundary(t *testing.T) {
	for _, par := range []int{1, DefaultCoprocessorConcurrency} {
		s := openMock(t, &Options{CoprocessorConcurrency: par})
		fill(t, s, 300)
		ctx := t.Context()
		for _, split := range splitKeys {
			k := bytes.TrimPrefix(split, []byte(DefaultPrefix))
			for _, reverse := range []bool{false, true} {
				what := []any{"%q reverse %v concurrency %d", k, reverse, par}
				assert.Empty(t, scanKeys(t, s, k, k, &kv.ScanOptions{Reverse: reverse}), what...)

				tx, err := s.NewTxn(ctx)
				require.NoError(t, err)
				it := tx.Scan(ctx, k, k, &kv.ScanOptions{Reverse: reverse})
				assert.False(t, it.Next(), what...)
				assert.NoError(t, it.Err(), what...)
				assert.NoError(t, it.Close())
				tx.Rollback()

				resp, err := s.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{Start: k, End: k}}, Desc: reverse})
				require.NoError(t, err, what...)
				assert.Empty(t, resp.Rows, what...)
				assert.Zero(t, resp.Stats.RowsScanned, what...)
			}
		}
	}
}

// TestScan_ReverseDownToAKeyAtARegionBoundary reads, in reverse, a range
// whose lower bound is a region boundary holding a key, in a region of
// exactly one scan batch of keys (client-go's 256): by Scan, a Txn's
// Scan, and the coprocessor (region by region and region-parallel,
// whole and paged), every key comes back once. The scanner's full batch
// ended on the lower bound, and it went on to ask the region before it
// for the keys below it (the mock cluster panicked).
func TestScan_ReverseDownToAKeyAtARegionBoundary(t *testing.T) {
	const batch = 256
	want := []string{"b"}
	for i := range batch - 1 {
		want = append(want, fmt.Sprintf("b%03d", i))
	}
	slices.Reverse(want)
	for _, par := range []int{1, DefaultCoprocessorConcurrency} {
		split := func(k string) []byte { return []byte(DefaultPrefix + k) }
		s, err := New(mockKVStoreSplit(t, nil, [][]byte{split("b"), split("c")}), &Options{CoprocessorConcurrency: par})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		b := s.NewBatch()
		for _, k := range append([]string{"a", "c"}, want...) {
			row, err := coproc.EncodeRow(map[string]any{"k": k})
			require.NoError(t, err)
			b.Set([]byte(k), row)
		}
		ctx := t.Context()
		require.NoError(t, s.Write(ctx, b))
		lo, hi := []byte("b"), []byte("c")
		rev := &kv.ScanOptions{Reverse: true, KeysOnly: true} // the values are rows

		assert.Equal(t, want, scanKeys(t, s, lo, hi, rev), "Scan, concurrency %d", par)

		tx, err := s.NewTxn(ctx)
		require.NoError(t, err)
		assert.Equal(t, want, scanKeys(t, tx, lo, hi, rev), "a Txn's Scan, concurrency %d", par)
		tx.Rollback()

		for _, paging := range []int{0, 100, 128, batch} {
			req := &coproc.Request{Ranges: []coproc.KeyRange{{Start: lo, End: hi}}, Columns: []string{coproc.KeyColumn}, Desc: true, PagingSize: paging}
			var got []string
			for range batch + 1 {
				resp, err := s.Coprocessor(ctx, req)
				require.NoError(t, err, "paging %d, concurrency %d", paging, par)
				for _, r := range resp.Rows {
					got = append(got, string(r[coproc.KeyColumn].([]byte)))
				}
				if resp.ResumeKey == nil {
					break
				}
				req = req.ResumeFrom(resp.ResumeKey)
			}
			assert.Equal(t, want, got, "the coprocessor, paging %d, concurrency %d", paging, par)
		}
	}
}

// Package kvtest is the conformance suite every kv.Store must pass, in the
// spirit of testing/fstest: a backend's own tests call Run with a function
// that opens a fresh, empty store, and every behaviour an application may
// rely on through kv.Store is checked against it — reads, batches,
// DeleteRange, snapshots, transactions (txn.go: what both the embedded
// store and TiKV promise), Close, contexts and the coprocessor.
//
// Stores are opened one per subtest; Run closes each one it opened (a
// second Close must return nil). Values must survive as given: empty
// values stay empty and present, keys may hold any byte.
package kvtest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// Run runs the suite against the stores open returns: each must be empty.
func Run(t *testing.T, open func(t *testing.T) kv.Store) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s kv.Store)
	}{
		{"GetAndMultiGet", testGetAndMultiGet},
		{"Scan", testScan},
		{"BatchesAndWrite", testBatchesAndWrite},
		{"ConcurrentWrites", testConcurrentWrites},
		{"DeleteRange", testDeleteRange},
		{"Snapshot", testSnapshot},
		{"Context", testContext},
		{"Coprocessor", testCoprocessor},
		{"TxnSnapshot", testTxnSnapshot},
		{"TxnOwnWrites", testTxnOwnWrites},
		{"TxnAtomicCommit", testTxnAtomicCommit},
		{"TxnConflict", testTxnConflict},
		{"TxnWriteSkew", testTxnWriteSkew},
		{"TxnLostUpdate", testTxnLostUpdate},
		{"TxnUpdate", testTxnUpdate},
		{"TxnDone", testTxnDone},
		{"TxnArguments", testTxnArguments},
		{"Close", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			if c.run == nil {
				testClose(t, s)
				return
			}
			t.Cleanup(func() { assert.NoError(t, s.Close()) })
			c.run(t, s)
		})
	}
}

// write applies sets (key, value, key, value, ...) in one batch.
func write(t *testing.T, s kv.Store, kvs ...string) {
	t.Helper()
	b := s.NewBatch()
	for i := 0; i < len(kvs); i += 2 {
		b.Set([]byte(kvs[i]), []byte(kvs[i+1]))
	}
	require.NoError(t, s.Write(context.Background(), b))
}

// keys scans [start, end) with opts and returns its keys and values.
func keys(t *testing.T, s interface {
	Scan(context.Context, []byte, []byte, *kv.ScanOptions) *kv.Iterator
}, start, end []byte, opts *kv.ScanOptions) (ks, vs []string) {
	t.Helper()
	it := s.Scan(context.Background(), start, end, opts)
	for it.Next() {
		ks = append(ks, string(it.Key()))
		if v := it.Value(); v != nil {
			vs = append(vs, string(v))
		}
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.NoError(t, it.Close(), "Iterator.Close is idempotent")
	return ks, vs
}

func testGetAndMultiGet(t *testing.T, s kv.Store) {
	ctx := context.Background()
	bin := string([]byte{0x00, 0xff, 0x00})
	write(t, s, "a", "1", "empty", "", bin, "binary", "\xff", "last")

	v, err := s.Get(ctx, []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, "1", string(v))
	v[0] = 'X' // the caller owns it
	v, err = s.Get(ctx, []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, "1", string(v), "changing a returned value changes nothing stored")

	v, err = s.Get(ctx, []byte("empty"))
	require.NoError(t, err)
	assert.NotNil(t, v, "an empty value is present")
	assert.Empty(t, v)
	v, err = s.Get(ctx, []byte(bin))
	require.NoError(t, err)
	assert.Equal(t, "binary", string(v))
	_, err = s.Get(ctx, []byte("missing"))
	assert.ErrorIs(t, err, kv.ErrNotFound)
	_, err = s.Get(ctx, nil)
	assert.ErrorIs(t, err, kv.ErrEmptyKey)

	vals, err := s.MultiGet(ctx, [][]byte{[]byte("missing"), []byte("\xff"), []byte("empty"), []byte("a"), []byte(bin), []byte("a")})
	require.NoError(t, err)
	require.Len(t, vals, 6)
	assert.Nil(t, vals[0])
	assert.Equal(t, "last", string(vals[1]))
	assert.NotNil(t, vals[2])
	assert.Empty(t, vals[2])
	assert.Equal(t, []string{"1", "binary", "1"}, []string{string(vals[3]), string(vals[4]), string(vals[5])})
	vals[3][0] = 'X'
	assert.Equal(t, "1", string(vals[5]), "repeated keys get their own slices")

	none, err := s.MultiGet(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, none)
	_, err = s.MultiGet(ctx, [][]byte{[]byte("a"), nil})
	assert.ErrorIs(t, err, kv.ErrEmptyKey)
}

func testScan(t *testing.T, s kv.Store) {
	var kvs []string
	var all []string
	for i := range 30 {
		k := fmt.Sprintf("k%02d", i)
		kvs = append(kvs, k, "v"+k)
		all = append(all, k)
	}
	kvs = append(kvs, "\x00first", "", "\xff\xfflast", "z")
	write(t, s, kvs...)
	full := append(append([]string{"\x00first"}, all...), "\xff\xfflast")

	ks, vs := keys(t, s, nil, nil, nil)
	assert.Equal(t, full, ks, "every key, in order")
	assert.Len(t, vs, len(full), "empty values are values")

	ks, _ = keys(t, s, []byte("k05"), []byte("k10"), nil)
	assert.Equal(t, all[5:10], ks, "[start, end)")
	ks, _ = keys(t, s, []byte("k05"), []byte("k10"), &kv.ScanOptions{Reverse: true})
	assert.Equal(t, []string{"k09", "k08", "k07", "k06", "k05"}, ks, "reverse")
	ks, _ = keys(t, s, []byte("k05"), nil, &kv.ScanOptions{Limit: 3})
	assert.Equal(t, all[5:8], ks, "limit")
	ks, _ = keys(t, s, nil, []byte("k03"), &kv.ScanOptions{Reverse: true, Limit: 2})
	assert.Equal(t, []string{"k02", "k01"}, ks, "reverse with a limit: the greatest keys")
	ks, vs = keys(t, s, []byte("k"), kv.PrefixEnd([]byte("k")), &kv.ScanOptions{KeysOnly: true})
	assert.Equal(t, all, ks, "a prefix")
	assert.Empty(t, vs, "keys only")
	ks, _ = keys(t, s, []byte("x"), []byte("y"), nil)
	assert.Empty(t, ks, "an empty range")

	it := s.Scan(context.Background(), []byte("b"), []byte("a"), nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), kv.ErrInvalidRange)
	require.NoError(t, it.Close())

	// Closed early, and the pairs seen are the iterator's to reuse.
	it = s.Scan(context.Background(), nil, nil, nil)
	require.True(t, it.Next())
	first := bytes.Clone(it.Key())
	require.NoError(t, it.Close())
	assert.False(t, it.Next(), "no pair after Close")
	assert.Equal(t, "\x00first", string(first))
}

func testBatchesAndWrite(t *testing.T, s kv.Store) {
	ctx := context.Background()
	write(t, s, "a", "1", "b", "1")
	b := s.NewBatch()
	b.Set([]byte("a"), []byte("2"))
	b.Delete([]byte("b"))
	b.Set([]byte("c"), []byte("3"))
	b.Set([]byte("c"), []byte("4")) // the last write of a key wins
	assert.Equal(t, 4, b.Len())
	require.NoError(t, s.Write(ctx, b))
	ks, vs := keys(t, s, nil, nil, nil)
	assert.Equal(t, []string{"a", "c"}, ks)
	assert.Equal(t, []string{"2", "4"}, vs)

	// An empty key fails the whole batch, until Reset.
	b.Reset()
	b.Set([]byte("d"), []byte("5"))
	b.Set(nil, []byte("x"))
	assert.ErrorIs(t, s.Write(ctx, b), kv.ErrEmptyKey)
	_, err := s.Get(ctx, []byte("d"))
	assert.ErrorIs(t, err, kv.ErrNotFound, "a failed batch writes nothing")
	b.Reset()
	require.NoError(t, s.Write(ctx, b), "an empty batch")
	b.Set([]byte("d"), []byte("5"))
	require.NoError(t, s.Write(ctx, b))
	v, err := s.Get(ctx, []byte("d"))
	require.NoError(t, err)
	assert.Equal(t, "5", string(v))
}

func testDeleteRange(t *testing.T, s kv.Store) {
	ctx := context.Background()
	write(t, s, "a", "1", "b", "1", "b\x00", "1", "c", "1", "d", "1", "e", "1")
	for _, k := range []string{"a", "b", "c"} {
		_, err := s.Get(ctx, []byte(k)) // a backend's cache has them now
		require.NoError(t, err)
	}
	b := s.NewBatch()
	b.DeleteRange([]byte("b"), []byte("c"))
	b.Set([]byte("b"), []byte("2")) // after the range: survives
	require.NoError(t, s.Write(ctx, b))
	ks, vs := keys(t, s, nil, nil, nil)
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, ks)
	assert.Equal(t, "2", vs[1])

	b.Reset()
	b.DeleteRange(nil, []byte("b\x00")) // open start
	b.DeleteRange([]byte("d"), nil)     // open end
	require.NoError(t, s.Write(ctx, b))
	ks, _ = keys(t, s, nil, nil, nil)
	assert.Equal(t, []string{"c"}, ks)
	for _, k := range []string{"a", "b", "d", "e"} {
		_, err := s.Get(ctx, []byte(k))
		assert.ErrorIs(t, err, kv.ErrNotFound, "%s was deleted", k)
	}

	b.Reset()
	b.DeleteRange([]byte("z"), []byte("a"))
	assert.ErrorIs(t, s.Write(ctx, b), kv.ErrInvalidRange)
	b.Reset()
	b.DeleteRange(nil, nil)
	require.NoError(t, s.Write(ctx, b))
	ks, _ = keys(t, s, nil, nil, nil)
	assert.Empty(t, ks, "both bounds open: every key")
}

func testSnapshot(t *testing.T, s kv.Store) {
	ctx := context.Background()
	row := func(v int) string {
		b, err := coproc.EncodeRow(map[string]any{"v": v})
		require.NoError(t, err)
		return string(b)
	}
	write(t, s, "a", row(1), "b", row(1), "c", row(1))
	snap, err := s.NewSnapshot(ctx)
	require.NoError(t, err)
	b := s.NewBatch()
	b.Set([]byte("a"), []byte(row(2)))
	b.Delete([]byte("b"))
	b.DeleteRange([]byte("c"), []byte("d"))
	b.Set([]byte("new"), []byte(row(2)))
	require.NoError(t, s.Write(ctx, b))

	v, err := snap.Get(ctx, []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, row(1), string(v))
	_, err = snap.Get(ctx, []byte("new"))
	assert.ErrorIs(t, err, kv.ErrNotFound)
	vals, err := snap.MultiGet(ctx, [][]byte{[]byte("b"), []byte("new"), []byte("c")})
	require.NoError(t, err)
	assert.Equal(t, row(1), string(vals[0]))
	assert.Nil(t, vals[1])
	assert.Equal(t, row(1), string(vals[2]))
	ks, _ := keys(t, snap, nil, nil, nil)
	assert.Equal(t, []string{"a", "b", "c"}, ks)
	resp, err := snap.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "sum", Col: "v", As: "sum"}}})
	require.NoError(t, err)
	require.Len(t, resp.Rows, 1)
	assert.EqualValues(t, 3, resp.Rows[0]["sum"])

	ks, _ = keys(t, s, nil, nil, nil)
	assert.Equal(t, []string{"a", "new"}, ks, "the store itself moved on")

	require.NoError(t, snap.Close())
	require.NoError(t, snap.Close(), "Snapshot.Close is idempotent")
	_, err = snap.Get(ctx, []byte("a"))
	assert.ErrorIs(t, err, kv.ErrClosed)
	_, err = snap.MultiGet(ctx, [][]byte{[]byte("a")})
	assert.ErrorIs(t, err, kv.ErrClosed)
	it := snap.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), kv.ErrClosed)
	require.NoError(t, it.Close())
}

func testContext(t *testing.T, s kv.Store) {
	write(t, s, "a", "1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	everyCallFails(t, s, ctx, context.Canceled)
	_, err := s.Get(context.Background(), []byte("b"))
	assert.ErrorIs(t, err, kv.ErrNotFound, "a Write whose context was done wrote nothing")
}

// everyCallFails checks that every read, a Write of one key ("b"),
// NewSnapshot and NewTxn fail with want under ctx.
func everyCallFails(t *testing.T, s kv.Store, ctx context.Context, want error) {
	t.Helper()
	_, err := s.Get(ctx, []byte("a"))
	assert.ErrorIs(t, err, want, "Get")
	_, err = s.MultiGet(ctx, [][]byte{[]byte("a")})
	assert.ErrorIs(t, err, want, "MultiGet")
	it := s.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), want, "Scan")
	require.NoError(t, it.Close())
	_, err = s.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}})
	assert.ErrorIs(t, err, want, "Coprocessor")
	b := s.NewBatch()
	b.Set([]byte("b"), []byte("2"))
	assert.ErrorIs(t, s.Write(ctx, b), want, "Write")
	_, err = s.NewSnapshot(ctx)
	assert.ErrorIs(t, err, want, "NewSnapshot")
	_, err = s.NewTxn(ctx)
	assert.ErrorIs(t, err, want, "NewTxn")
}

func testCoprocessor(t *testing.T, s kv.Store) {
	ctx := context.Background()
	b := s.NewBatch()
	for i := range 100 {
		row, err := coproc.EncodeRow(map[string]any{"region": fmt.Sprintf("r%d", i%3), "amount": i})
		require.NoError(t, err)
		b.Set(fmt.Appendf(nil, "sale/%03d", i), row)
	}
	require.NoError(t, s.Write(ctx, b))
	sales := []coproc.KeyRange{{Start: []byte("sale/"), End: kv.PrefixEnd([]byte("sale/"))}}

	// A filter and aggregates.
	resp, err := s.Coprocessor(ctx, &coproc.Request{
		Ranges: sales,
		Filter: &coproc.Expr{Op: "ge", Args: []*coproc.Expr{{Op: "col", Col: "amount"}, {Op: "const", Value: 50}}},
		Aggs:   []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "amount", As: "sum"}, {Func: "max", Col: "amount", As: "max"}},
	})
	require.NoError(t, err)
	require.Len(t, resp.Rows, 1)
	assert.EqualValues(t, 50, resp.Rows[0]["n"])
	assert.EqualValues(t, (50+99)*50/2, resp.Rows[0]["sum"])
	assert.EqualValues(t, 99, resp.Rows[0]["max"])

	// Groups, top-N.
	resp, err = s.Coprocessor(ctx, &coproc.Request{
		Ranges: sales, GroupBy: []string{"region"},
		Aggs:    []coproc.Agg{{Func: "sum", Col: "amount", As: "sum"}},
		OrderBy: []coproc.Order{{Col: "sum", Desc: true}}, Limit: 2,
	})
	require.NoError(t, err)
	require.Len(t, resp.Rows, 2)
	assert.Equal(t, "r0", resp.Rows[0]["region"], "r0 has 0, 3, ..., 99")
	assert.EqualValues(t, 1683, resp.Rows[0]["sum"])

	// Paging, descending, across ranges: every row once, in order.
	req := &coproc.Request{
		Ranges:  []coproc.KeyRange{{Start: []byte("sale/010"), End: []byte("sale/030")}, {Start: []byte("sale/090"), End: nil}},
		Columns: []string{"_key", "amount"}, PagingSize: 7, Desc: true,
	}
	var got []int64
	for pages := 0; ; pages++ {
		require.Less(t, pages, 50, "paging ends")
		resp, err := s.Coprocessor(ctx, req)
		require.NoError(t, err)
		for _, r := range resp.Rows {
			n, ok := r["amount"].(int64)
			require.True(t, ok, "amount is %T", r["amount"])
			got = append(got, n)
		}
		if resp.ResumeKey == nil {
			break
		}
		req = req.ResumeFrom(resp.ResumeKey)
	}
	var want []int64
	for i := 99; i >= 90; i-- {
		want = append(want, int64(i))
	}
	for i := 29; i >= 10; i-- {
		want = append(want, int64(i))
	}
	assert.Equal(t, want, got)

	_, err = s.Coprocessor(ctx, &coproc.Request{})
	assert.ErrorIs(t, err, coproc.ErrInvalidRequest)
	_, err = s.Coprocessor(ctx, nil)
	assert.ErrorIs(t, err, coproc.ErrInvalidRequest)
}

func testClose(t *testing.T, s kv.Store) {
	ctx := context.Background()
	write(t, s, "a", "1")
	snap, err := s.NewSnapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")

	everyCallFails(t, s, ctx, kv.ErrClosed)
	_, err = s.Get(ctx, nil)
	assert.ErrorIs(t, err, kv.ErrClosed, "closed comes before a bad argument")
	_, err = snap.Get(ctx, []byte("a"))
	assert.ErrorIs(t, err, kv.ErrClosed, "Close closed the open snapshot")
	assert.NoError(t, snap.Close())
}

// testConcurrentWrites: writers that set the same keys at once all succeed
// — a blind write has nothing to conflict on, and the last writer wins —
// and one writer's batch wins whole.
func testConcurrentWrites(t *testing.T, s kv.Store) {
	ctx := context.Background()
	const writers, each = 8, 10
	errs := make(chan error, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				b := s.NewBatch()
				v := fmt.Appendf(nil, "w%d-%d", w, i)
				b.Set([]byte("hot"), v)
				b.Set([]byte("hot2"), v)
				errs <- s.Write(ctx, b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "a blind write never fails for a conflict")
	}
	vals, err := s.MultiGet(ctx, [][]byte{[]byte("hot"), []byte("hot2")})
	require.NoError(t, err)
	assert.Regexp(t, `^w[0-7]-[0-9]$`, string(vals[0]))
	assert.Equal(t, string(vals[0]), string(vals[1]), "one batch wins whole")
}

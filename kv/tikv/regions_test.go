package tikv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// scanHook is a client-go Client that delays the scan RPCs it passes on,
// counts how many are in flight at once, and fails those sent to one
// region.
type scanHook struct {
	tikv.Client
	delay      time.Duration // set before the store is built
	failRegion atomic.Uint64 // 0: none
	inflight   atomic.Int64
	peak       atomic.Int64 // the most scans in flight at once
}

func (h *scanHook) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	if req.Type != tikvrpc.CmdScan {
		return h.Client.SendRequest(ctx, addr, req, timeout)
	}
	n := h.inflight.Add(1)
	defer h.inflight.Add(-1)
	for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
	}
	time.Sleep(h.delay)
	if id := h.failRegion.Load(); id != 0 && req.Context.RegionId == id {
		return &tikvrpc.Response{Resp: &kvrpcpb.ScanResponse{Error: &kvrpcpb.KeyError{Abort: "injected failure"}}}, nil
	}
	return h.Client.SendRequest(ctx, addr, req, timeout)
}

// openHooked returns a Store on a fresh mock cluster (split at splitKeys)
// whose requests go through h, filled with rows in six regions: a000…
// a019, k000…k299 (three regions), sale/000…sale/099 (two), zz000…zz019.
func openHooked(t testing.TB, h *scanHook) *Store {
	t.Helper()
	s, _ := hookedCluster(t, nil, func(c tikv.Client) tikv.Client { h.Client = c; return h })
	b := s.NewBatch()
	i := 0
	for _, g := range []struct {
		format string
		n      int
	}{{"a%03d", 20}, {"k%03d", 300}, {"sale/%03d", 100}, {"zz%03d", 20}} {
		for j := range g.n {
			row, err := coproc.EncodeRow(map[string]any{"n": i, "g": i % 3})
			require.NoError(t, err)
			b.Set(fmt.Appendf(nil, g.format, j), row)
			i++
		}
	}
	require.NoError(t, s.Write(context.Background(), b))
	return s
}

// copWith runs req with the store's coprocessor concurrency set to par.
func copWith(t *testing.T, s *Store, par int, req *coproc.Request) *coproc.Response {
	t.Helper()
	s.opts.CoprocessorConcurrency = par // no request runs meanwhile
	resp, err := s.Coprocessor(context.Background(), req)
	require.NoError(t, err)
	return resp
}

// pages runs req page by page (ResumeFrom) and returns every page's rows.
func pages(t *testing.T, s *Store, par int, req *coproc.Request) (rows []map[string]any, n int) {
	t.Helper()
	for ; n < 100; n++ {
		resp := copWith(t, s, par, req)
		rows = append(rows, resp.Rows...)
		if resp.ResumeKey == nil {
			return rows, n + 1
		}
		req = req.ResumeFrom(resp.ResumeKey)
	}
	t.Fatal("paging did not end")
	return nil, 0
}

func TestCoprocessor_RegionParallelReadsWhatTheSequentialReadDoes(t *testing.T) {
	s := openHooked(t, &scanHook{})
	all := []coproc.KeyRange{{}}
	for name, req := range map[string]*coproc.Request{
		"rows":                              {Ranges: all},
		"rows desc":                         {Ranges: all, Desc: true},
		"count":                             {Ranges: all, Aggs: []coproc.Agg{{Func: "count", As: "n"}}},
		"aggregates":                        {Ranges: all, GroupBy: []string{"g"}, Aggs: []coproc.Agg{{Func: "sum", Col: "n", As: "s"}, {Func: "count", As: "c"}}},
		"limit":                             {Ranges: all, Limit: 7},
		"limit desc":                        {Ranges: all, Limit: 260, Desc: true},
		"limit past a batch across regions": {Ranges: all, Limit: 300},
		"bounded, several ranges":           {Ranges: []coproc.KeyRange{{Start: []byte("a010"), End: []byte("k100")}, {Start: []byte("k150"), End: []byte("sale/070")}}, Desc: true},
		"filter":                            {Ranges: all, Filter: &coproc.Expr{Op: "eq", Args: []*coproc.Expr{{Op: "col", Col: "g"}, {Op: "const", Value: 1}}}},
	} {
		seq := copWith(t, s, 1, req)
		par := copWith(t, s, 4, req)
		assert.Equal(t, seq.Rows, par.Rows, name)
		assert.Equal(t, seq.ResumeKey, par.ResumeKey, name)
		assert.Equal(t, seq.Stats.RowsScanned, par.Stats.RowsScanned, name)
	}
	resp := copWith(t, s, 4, &coproc.Request{Ranges: all, Aggs: []coproc.Agg{{Func: "count", As: "n"}}})
	assert.EqualValues(t, 440, resp.Rows[0]["n"], "every row of six regions")
	resp = copWith(t, s, 4, &coproc.Request{Ranges: all, Desc: true, Limit: 3})
	require.Len(t, resp.Rows, 3)
	assert.EqualValues(t, 439, resp.Rows[0]["n"], "desc: from the last region down")

	for _, desc := range []bool{false, true} {
		req := &coproc.Request{Ranges: all, PagingSize: 70, Desc: desc}
		seq, n := pages(t, s, 1, req)
		par, m := pages(t, s, 4, req)
		require.Len(t, par, 440, "desc %v: every row once across the pages", desc)
		assert.Equal(t, seq, par, "desc %v: page by page, as the sequential read", desc)
		assert.Equal(t, n, m)
		assert.Equal(t, 7, m, "440 rows by 70")
		for i, r := range par {
			want := i
			if desc {
				want = 439 - i
			}
			require.EqualValues(t, want, r["n"], "desc %v: row %d in order across region boundaries", desc, i)
		}
	}
}

func TestCoprocessor_RegionsAreReadConcurrently(t *testing.T) {
	h := &scanHook{delay: 20 * time.Millisecond}
	s := openHooked(t, h)
	req := &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count", As: "n"}}}

	h.peak.Store(0)
	resp := copWith(t, s, 1, req)
	assert.EqualValues(t, 440, resp.Rows[0]["n"])
	assert.EqualValues(t, 1, h.peak.Load(), "concurrency 1: one scan at a time")

	h.peak.Store(0)
	resp = copWith(t, s, 4, req)
	assert.EqualValues(t, 440, resp.Rows[0]["n"])
	assert.Greater(t, h.peak.Load(), int64(1), "scans of several regions overlap")
	assert.LessOrEqual(t, h.peak.Load(), int64(4), "no more than the concurrency")
}

// regionID is the region holding the store's key k.
func regionID(t *testing.T, s *Store, k string) uint64 {
	t.Helper()
	loc, err := s.kvs.GetRegionCache().LocateKey(tikv.NewBackofferWithVars(context.Background(), 1000, nil), s.ks.key([]byte(k)))
	require.NoError(t, err)
	return loc.Region.GetID()
}

// readAll reads rows until an error or the end, and returns the keys.
func readAll(w *regionRows) ([]string, error) {
	var keys []string
	for {
		k, _, err := w.Next()
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return keys, err
		}
		keys = append(keys, string(k))
	}
}

// newRegionRows reads the whole store at a fresh timestamp, 4 regions ahead.
func newRegionRows(t *testing.T, ctx context.Context, s *Store, reverse bool) *regionRows {
	ts, err := s.now(ctx)
	require.NoError(t, err)
	return &regionRows{r: reader{s: s, ts: ts}, ctx: ctx, reverse: reverse, par: 4}
}

func TestCoprocessor_AnErrorInOneRegionComesAfterTheRowsBeforeIt(t *testing.T) {
	h := &scanHook{}
	s := openHooked(t, h)
	h.failRegion.Store(regionID(t, s, "k100")) // [k05, k20)

	keys, err := readAll(newRegionRows(t, context.Background(), s, false))
	require.ErrorContains(t, err, "injected failure")
	assert.ErrorContains(t, err, "tikv: scan [-inf, +inf)")
	require.Len(t, keys, 70, "a000…a019, k000…k049: the regions before the failing one")
	assert.Equal(t, "k049", keys[69])

	keys, err = readAll(newRegionRows(t, context.Background(), s, true))
	require.ErrorContains(t, err, "injected failure")
	require.Len(t, keys, 20+100+100, "reverse: zz…, sale/…, k299…k200, then the error")
	assert.Equal(t, "k200", keys[len(keys)-1])

	_, err = s.Coprocessor(context.Background(), &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}})
	assert.ErrorContains(t, err, "injected failure", "the request fails")
}

func TestCoprocessor_EarlyCloseAndCancelEndEveryReader(t *testing.T) {
	h := &scanHook{delay: 5 * time.Millisecond}
	s := openHooked(t, h)
	ignore := []goleak.Option{goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("github.com/pingcap/goleveldb/leveldb.(*DB).mpoolDrain")}

	w := newRegionRows(t, context.Background(), s, false)
	_, _, err := w.Next()
	require.NoError(t, err)
	require.NoError(t, w.Close())
	goleak.VerifyNone(t, ignore...)
	_, _, err = w.Next()
	assert.ErrorIs(t, err, io.EOF, "closed rows read nothing")

	ctx, cancel := context.WithCancel(context.Background())
	w = newRegionRows(t, ctx, s, true)
	_, _, err = w.Next()
	require.NoError(t, err)
	cancel()
	goleak.VerifyNone(t, ignore...) // the readers saw the context end, before any Close
	_, _, err = w.Next()
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, w.Close())

	// A limit ends the readers when it is reached.
	w = newRegionRows(t, context.Background(), s, false)
	w.limit = 30
	keys, err := readAll(w)
	require.NoError(t, err)
	assert.Len(t, keys, 30)
	goleak.VerifyNone(t, ignore...)

	// The store's Close ends a running request and its readers.
	done := make(chan error, 1)
	go func() {
		_, err := s.Coprocessor(context.Background(), &coproc.Request{Ranges: []coproc.KeyRange{{}}, Columns: []string{"n"}})
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it start: the test holds either way
	require.NoError(t, s.Close())
	if err := <-done; err != nil {
		assert.ErrorIs(t, err, kv.ErrClosed)
	}
	goleak.VerifyNone(t, ignore...)
}

// BenchmarkCoprocessor_RegionConcurrency counts the rows of six regions,
// reading one region at a time and four, with no delay (the in-process
// mock: what the readers cost) and with a round trip of 2 ms injected in
// every scan RPC (a network's, which the mock lacks).
func BenchmarkCoprocessor_RegionConcurrency(b *testing.B) {
	for _, rtt := range []time.Duration{0, 2 * time.Millisecond} {
		h := &scanHook{delay: rtt}
		s := openHooked(b, h)
		req := &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count", As: "n"}}}
		for _, par := range []int{1, 4} {
			b.Run(fmt.Sprintf("rtt=%v/concurrency=%d", rtt, par), func(b *testing.B) {
				s.opts.CoprocessorConcurrency = par
				for b.Loop() {
					if _, err := s.Coprocessor(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

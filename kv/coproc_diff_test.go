package kv

import (
	"context"
	"flag"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/coproc/coproctest"
)

var (
	diffSeed     = flag.Uint64("coproc-seed", 0, "seed of TestCoprocessor_Differential (0 = from the clock); a failing run prints its seed")
	diffRequests = flag.Int("coproc-requests", coproctest.DefaultRequests, "random requests of TestCoprocessor_Differential; raise it for a long run")
)

// TestCoprocessor_Differential checks db.Coprocessor against the reference
// evaluator of package coproctest, written from the documented semantics:
// random datasets of mixed-type rows, random requests (filters over every
// op, projections, group-by with every aggregate, top-N, limits, paging,
// both directions, several ranges). A quarter of the requests go through
// CoprocessorRaw and the msgpack codec instead. kv/tikv runs the same
// test against its coprocessor.
//
// Replay a failure with -coproc-seed=N (the seed is logged); run longer with
// -coproc-requests=N.
func TestCoprocessor_Differential(t *testing.T) {
	cfg := coproctest.Config{Seed: *diffSeed, SeedFlag: "coproc-seed", Requests: *diffRequests}
	coproctest.Run(t, cfg, func(t *testing.T, rows []coproctest.Row) coproctest.Target {
		db := openTest(t, "", &Options{InMemory: true, Workers: 2})
		b := db.NewBatch()
		for i, r := range rows {
			b.Set(r.Key, r.Value)
			if b.Len() == 500 || i == len(rows)-1 {
				require.NoError(t, db.Apply(b))
				b = db.NewBatch()
			}
		}
		return coproctest.Target{Coprocessor: db.Coprocessor, Raw: db.CoprocessorRaw}
	})
}

// TestCoprocessor_PagingEverySize pages a 60-row, three-range request at
// every paging size from 1 to 70, both directions, with and without a
// filter: the pages, concatenated, are the unpaged answer, no row twice or
// missing, and only the last page has a nil ResumeKey.
func TestCoprocessor_PagingEverySize(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, Workers: 2})
	for i := range 80 {
		row, err := coproc.EncodeRow(map[string]any{"i": i, "m": i % 3})
		require.NoError(t, err)
		require.NoError(t, db.Set(keyN(i), row))
	}
	ranges := []coproc.KeyRange{{Start: keyN(0), End: keyN(20)}, {Start: keyN(30), End: keyN(50)}, {Start: keyN(60), End: keyN(80)}}
	const inRanges = 60
	ctx := context.Background()
	for _, desc := range []bool{false, true} {
		for _, filtered := range []bool{false, true} {
			var want []int64 // independent of the coprocessor
			for _, r := range [][2]int{{0, 20}, {30, 50}, {60, 80}} {
				for i := r[0]; i < r[1]; i++ {
					if !filtered || i%3 != 0 {
						want = append(want, int64(i))
					}
				}
			}
			if desc {
				slices.Reverse(want)
			}
			base := &coproc.Request{Ranges: ranges, Columns: []string{coproc.KeyColumn, "i"}, Desc: desc}
			if filtered {
				base.Filter = &coproc.Expr{Op: "ne", Args: []*coproc.Expr{{Op: "col", Col: "m"}, {Op: "const", Value: 0}}}
			}
			unpaged, err := db.Coprocessor(ctx, base)
			require.NoError(t, err)
			require.Nil(t, unpaged.ResumeKey)
			require.Equal(t, want, pagingValues(t, unpaged.Rows))
			for size := 1; size <= 70; size++ {
				name := fmt.Sprintf("desc=%v filtered=%v size=%d", desc, filtered, size)
				req := *base
				req.PagingSize = size
				r := &req
				var got []map[string]any
				var scanned int64
				maxPages := (inRanges+size-1)/size + 1 // a trailing empty page when the ranges end on a page
				for page := 1; ; page++ {
					require.LessOrEqual(t, page, maxPages, name)
					resp, err := db.Coprocessor(ctx, r)
					require.NoError(t, err, name)
					require.LessOrEqual(t, resp.Stats.RowsScanned, int64(size), "%s: page %d", name, page)
					scanned += resp.Stats.RowsScanned
					got = append(got, resp.Rows...)
					if resp.ResumeKey == nil {
						break
					}
					require.EqualValues(t, size, resp.Stats.RowsScanned, "%s: page %d stopped early but has a ResumeKey", name, page)
					r = r.ResumeFrom(resp.ResumeKey)
				}
				assert.EqualValues(t, inRanges, scanned, "%s: every row scanned once", name)
				seen := map[string]bool{}
				for _, row := range got {
					k := string(row[coproc.KeyColumn].([]byte))
					assert.False(t, seen[k], "%s: %q twice", name, k)
					seen[k] = true
				}
				assert.Equal(t, want, pagingValues(t, got), name)
				assert.Equal(t, unpaged.Rows, got, name)
			}
		}
	}
}

func pagingValues(t *testing.T, rows []map[string]any) []int64 {
	t.Helper()
	var out []int64
	for _, r := range rows {
		v, ok := r["i"].(int64)
		require.True(t, ok, "%v", r)
		out = append(out, v)
	}
	return out
}

// TestCoprocessor_SumExact checks that an integer sum fails with
// ErrOverflow exactly when the sum itself leaves int64, whatever the order
// of its inputs — not when a running int64 sum would pass its bounds on the
// way — in both scan directions.
func TestCoprocessor_SumExact(t *testing.T) {
	const maxI, minI = int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range []struct {
		name string
		vals []any
		want any // int64, float64, or nil for ErrOverflow
	}{
		{name: "max then back", vals: []any{maxI, int64(1), int64(-2)}, want: maxI - 1},
		{name: "min then back", vals: []any{minI, int64(-1), int64(2)}, want: minI + 1},
		{name: "large unsigned then back", vals: []any{uint64(1) << 63, int64(-1)}, want: maxI},
		{name: "two max two min", vals: []any{maxI, maxI, minI, minI}, want: int64(-2)},
		{name: "max unsigned and min twice", vals: []any{uint64(math.MaxUint64), minI, minI, int64(1)}, want: int64(0)},
		{name: "large unsigned alone", vals: []any{uint64(1) << 63}},
		{name: "two max", vals: []any{maxI, maxI}},
		{name: "two min", vals: []any{minI, minI}},
		{name: "min less one", vals: []any{minI, int64(5), int64(-6)}},
		{name: "a float makes it a float", vals: []any{maxI, maxI, 0.5}, want: 2*float64(maxI) + 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, "", &Options{InMemory: true, Workers: 1})
			for i, v := range c.vals {
				row, err := coproc.EncodeRow(map[string]any{"v": v, "g": "x"})
				require.NoError(t, err)
				require.NoError(t, db.Set(keyN(i), row))
			}
			for _, desc := range []bool{false, true} {
				for _, groupBy := range [][]string{nil, {"g"}} {
					resp, err := db.Coprocessor(context.Background(), &coproc.Request{
						Ranges: []coproc.KeyRange{{}}, GroupBy: groupBy, Desc: desc,
						Aggs: []coproc.Agg{{Func: "sum", Col: "v", As: "s"}},
					})
					if c.want == nil {
						assert.ErrorIs(t, err, coproc.ErrOverflow, "desc=%v", desc)
						continue
					}
					require.NoError(t, err, "desc=%v", desc)
					require.Len(t, resp.Rows, 1)
					if f, ok := c.want.(float64); ok {
						assert.InDelta(t, f, resp.Rows[0]["s"], f*1e-12, "desc=%v", desc)
					} else {
						assert.Equal(t, c.want, resp.Rows[0]["s"], "desc=%v", desc)
					}
				}
			}
		})
	}
}

// TestCoprocessor_TopNByUnprojectedColumn orders rows by a column that
// Columns leaves out: top-N still orders by the rows' values.
func TestCoprocessor_TopNByUnprojectedColumn(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, Workers: 1})
	for i := range 10 {
		row, err := coproc.EncodeRow(map[string]any{"n": 10 - i, "v": fmt.Sprintf("v%d", i)})
		require.NoError(t, err)
		require.NoError(t, db.Set(keyN(i), row))
	}
	for _, c := range []struct {
		name    string
		columns []string
		order   []coproc.Order
		want    []any // the first column of each row
	}{
		{name: "by n, key projected", columns: []string{coproc.KeyColumn}, order: []coproc.Order{{Col: "n"}}, want: []any{keyN(9), keyN(8), keyN(7)}},
		{name: "by n desc, v projected", columns: []string{"v"}, order: []coproc.Order{{Col: "n", Desc: true}}, want: []any{"v0", "v1", "v2"}},
		{name: "by key desc, v projected", columns: []string{"v"}, order: []coproc.Order{{Col: coproc.KeyColumn, Desc: true}}, want: []any{"v9", "v8", "v7"}},
		{name: "by n, every column", order: []coproc.Order{{Col: "n"}}, want: []any{"v9", "v8", "v7"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := db.Coprocessor(context.Background(), &coproc.Request{Ranges: []coproc.KeyRange{{}}, Columns: c.columns, OrderBy: c.order, Limit: 3})
			require.NoError(t, err)
			col := "v"
			if c.columns != nil {
				col = c.columns[0]
			}
			var got []any
			for _, r := range resp.Rows {
				got = append(got, r[col])
				if c.columns != nil {
					assert.Len(t, r, len(c.columns), "only the projected columns")
				}
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// TestCoprocessor_GroupByLargeNumbers groups numbers by value: a uint64
// and a float64 that "eq" finds equal are one group, also past MaxInt64.
func TestCoprocessor_GroupByLargeNumbers(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, Workers: 1})
	vals := []any{uint64(1) << 63, float64(1 << 63), int64(7), 7.0, uint64(math.MaxUint64 - 2047), float64(math.MaxUint64 - 2047), 1e19, uint64(1e19)}
	for i, v := range vals {
		row, err := coproc.EncodeRow(map[string]any{"v": v})
		require.NoError(t, err)
		require.NoError(t, db.Set(keyN(i), row))
	}
	ctx := context.Background()
	for i := 0; i < len(vals); i += 2 {
		resp, err := db.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}},
			Filter: &coproc.Expr{Op: "eq", Args: []*coproc.Expr{{Op: "col", Col: "v"}, {Op: "const", Value: vals[i+1]}}}})
		require.NoError(t, err)
		require.Len(t, resp.Rows, 2, "eq(v, %v) holds for %v and %v", vals[i+1], vals[i], vals[i+1])
	}
	resp, err := db.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, GroupBy: []string{"v"}, Aggs: []coproc.Agg{{Func: "count", As: "n"}}})
	require.NoError(t, err)
	assert.Len(t, resp.Rows, len(vals)/2, "%v", resp.Rows)
	for _, r := range resp.Rows {
		assert.EqualValues(t, 2, r["n"], "%v", r)
	}
}

// copRows fills db with n small rows (keyN(i): {"v": i % 100}).
func copRows(t *testing.T, db *DB, n int) {
	t.Helper()
	enc := make([][]byte, 100)
	for i := range enc {
		var err error
		enc[i], err = coproc.EncodeRow(map[string]any{"v": i})
		require.NoError(t, err)
	}
	load(t, db, n, func(i int) []byte { return enc[i%100] })
}

// waitRunning waits until the pool runs a step, or done is set.
func waitRunning(db *DB, done *atomic.Bool) {
	for db.Stats().Pool.Busy == 0 && !done.Load() {
		runtime.Gosched()
	}
}

// TestCoprocessor_LongAggregateYields runs an aggregate over many rows on
// one worker: it yields (Stats.Yields > 0, Steps > 1), and a Get issued
// while it runs completes before it. Should the aggregate finish before the
// Get returns (nothing to order), the dataset doubles and the test runs
// again.
func TestCoprocessor_LongAggregateYields(t *testing.T) {
	ctx := context.Background()
	req := &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}, {Func: "sum", Col: "v"}}}
	for n := 200_000; ; n *= 2 {
		require.LessOrEqual(t, n, 1_600_000, "the aggregate finished before the Get every time")
		ordered := func() bool {
			db, err := Open("", &Options{InMemory: true, Workers: 1})
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			copRows(t, db, n)
			var aggDone atomic.Bool
			type result struct {
				resp *coproc.Response
				err  error
			}
			results := make(chan result, 1)
			go func() {
				resp, err := db.Coprocessor(ctx, req)
				aggDone.Store(true)
				results <- result{resp, err}
			}()
			waitRunning(db, &aggDone)
			v, err := db.Get(ctx, keyN(n/2))
			finishedFirst := aggDone.Load()
			require.NoError(t, err)
			row, err := coproc.DecodeRow(v)
			require.NoError(t, err)
			assert.EqualValues(t, n/2%100, row["v"], "the Get's value")
			res := <-results
			require.NoError(t, res.err)
			require.Len(t, res.resp.Rows, 1)
			assert.EqualValues(t, n, res.resp.Rows[0]["count(*)"])
			assert.EqualValues(t, n/100*4950, res.resp.Rows[0]["sum(v)"])
			st := res.resp.Stats
			t.Logf("%d rows: aggregate finished first %v; %+v", n, finishedFirst, st)
			assert.Greater(t, st.Yields, 0, "the aggregate yielded")
			assert.Greater(t, st.Steps, 1, "the aggregate ran in several steps")
			return !finishedFirst
		}()
		if ordered {
			return
		}
	}
}

// TestCoprocessor_BadRow stores a value that is not a row: a request whose
// ranges meet it fails with ErrBadRow naming its key, whatever it asks;
// one whose ranges avoid it succeeds.
func TestCoprocessor_BadRow(t *testing.T) {
	for _, bad := range []struct {
		name string
		val  []byte
	}{
		{name: "int", val: []byte{0x01}},
		{name: "string", val: []byte{0xa1, 'x'}},
		{name: "not msgpack", val: []byte{0xc1}},
		{name: "truncated map", val: []byte{0x82, 0xa1, 'v'}},
		{name: "plain text", val: []byte("not a row")},
	} {
		t.Run(bad.name, func(t *testing.T) {
			db := openTest(t, "", &Options{InMemory: true, Workers: 1})
			copRows(t, db, 10)
			require.NoError(t, db.Set(keyN(5), bad.val))
			for _, c := range []struct {
				name string
				req  coproc.Request
			}{
				{name: "whole rows", req: coproc.Request{}},
				{name: "projection", req: coproc.Request{Columns: []string{"v"}}},
				{name: "key only", req: coproc.Request{Columns: []string{coproc.KeyColumn}}},
				{name: "filter", req: coproc.Request{Filter: &coproc.Expr{Op: "isnull", Args: []*coproc.Expr{{Op: "col", Col: "v"}}}}},
				{name: "count(*)", req: coproc.Request{Aggs: []coproc.Agg{{Func: "count"}}}},
				{name: "group", req: coproc.Request{GroupBy: []string{"v"}, Aggs: []coproc.Agg{{Func: "sum", Col: "v"}}}},
				{name: "top-N", req: coproc.Request{OrderBy: []coproc.Order{{Col: "v"}}, Limit: 2}},
				{name: "paged", req: coproc.Request{PagingSize: 3}},
				{name: "descending", req: coproc.Request{Desc: true}},
			} {
				req := c.req
				req.Ranges = []coproc.KeyRange{{Start: keyN(2), End: keyN(8)}}
				r := &req
				var err error
				for range 10 { // through every page
					var resp *coproc.Response
					if resp, err = db.Coprocessor(context.Background(), r); err != nil || resp.ResumeKey == nil {
						break
					}
					r = r.ResumeFrom(resp.ResumeKey)
				}
				require.ErrorIs(t, err, coproc.ErrBadRow, c.name)
				assert.Contains(t, err.Error(), fmt.Sprintf("%q", keyN(5)), c.name)

				req.Ranges = []coproc.KeyRange{{End: keyN(5)}, {Start: append(keyN(5), 0)}}
				_, err = db.Coprocessor(context.Background(), &req)
				assert.NoError(t, err, "%s: the bad value is outside the ranges", c.name)
			}
		})
	}
}

// TestCoprocessor_DeadlineWhileQueued queues a request behind a Get that
// holds the only worker: its deadline ends it while it waits.
func TestCoprocessor_DeadlineWhileQueued(t *testing.T) {
	for _, sched := range []Scheduler{SchedulerFIFO, SchedulerMLFQ} {
		t.Run(string(sched), func(t *testing.T) {
			db, release := openSaturated(t, Options{Scheduler: sched})
			copRows(t, db, 100)
			errs := make(chan error, 2)
			for _, raw := range []bool{false, true} {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
					defer cancel()
					req := &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}}
					if !raw {
						_, err := db.Coprocessor(ctx, req)
						errs <- err
						return
					}
					b, err := coproc.Encode(req)
					if err != nil {
						errs <- err
						return
					}
					_, err = db.CoprocessorRaw(ctx, b)
					errs <- err
				}()
			}
			got := collect(t, errs, 2, release)
			release()
			for _, err := range got {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			}
		})
	}
}

// TestCoprocessor_CloseEndsLongAggregate closes the store under a long
// aggregate: it ends with ErrClosed, Close returns nil, and nothing leaks
// (TestMain runs goleak). Should the aggregate finish before Close, the
// dataset doubles and the test runs again.
func TestCoprocessor_CloseEndsLongAggregate(t *testing.T) {
	req := &coproc.Request{Ranges: []coproc.KeyRange{{}}, GroupBy: []string{"v"}, Aggs: []coproc.Agg{{Func: "count"}, {Func: "avg", Col: "v"}}}
	for n := 200_000; ; n *= 2 {
		require.LessOrEqual(t, n, 1_600_000, "the aggregate finished before Close every time")
		db, err := Open("", &Options{InMemory: true, Workers: 1})
		require.NoError(t, err)
		copRows(t, db, n)
		var aggDone atomic.Bool
		errs := make(chan error, 1)
		go func() {
			_, err := db.Coprocessor(context.Background(), req)
			aggDone.Store(true)
			errs <- err
		}()
		waitRunning(db, &aggDone)
		require.NoError(t, db.Close())
		err = <-errs
		if err == nil {
			t.Logf("%d rows: the aggregate finished before Close", n)
			continue
		}
		assert.ErrorIs(t, err, ErrClosed)
		t.Logf("%d rows: %v", n, err)
		return
	}
}

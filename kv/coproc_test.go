package kv

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

func TestCoprocessor_AggregateTopNPagingErrors(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true})
	for i := range 1000 {
		row, err := coproc.EncodeRow(map[string]any{"region": fmt.Sprintf("r%d", i%7), "amount": i, "f": float64(i) / 2})
		require.NoError(t, err)
		require.NoError(t, db.Set(keyN(i), row))
	}
	ctx := context.Background()
	resp, err := db.Coprocessor(ctx, &coproc.Request{
		Ranges: []coproc.KeyRange{{}},
		Filter: &coproc.Expr{Op: "ge", Args: []*coproc.Expr{{Op: "col", Col: "amount"}, {Op: "const", Value: 500}}},
		Aggs:   []coproc.Agg{{Func: "count"}, {Func: "sum", Col: "amount"}, {Func: "avg", Col: "f"}},
	})
	require.NoError(t, err)
	require.Len(t, resp.Rows, 1)
	assert.EqualValues(t, 500, resp.Rows[0]["count(*)"])
	assert.EqualValues(t, (500+999)*500/2, resp.Rows[0]["sum(amount)"])
	t.Logf("%+v", resp.Stats)

	resp, err = db.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, GroupBy: []string{"region"}, Aggs: []coproc.Agg{{Func: "count", As: "n"}}, OrderBy: []coproc.Order{{Col: "n", Desc: true}}, Limit: 3})
	require.NoError(t, err)
	require.Len(t, resp.Rows, 3)
	t.Logf("%v", resp.Rows)

	// Paging concatenation.
	req := &coproc.Request{Ranges: []coproc.KeyRange{{Start: keyN(10), End: keyN(100)}, {Start: keyN(200), End: keyN(250)}}, Columns: []string{"_key", "amount"}, PagingSize: 7, Desc: true}
	var got []any
	for pages := 0; ; pages++ {
		require.Less(t, pages, 100)
		resp, err := db.Coprocessor(ctx, req)
		require.NoError(t, err)
		for _, r := range resp.Rows {
			got = append(got, r["amount"])
		}
		if resp.ResumeKey == nil {
			break
		}
		req = req.ResumeFrom(resp.ResumeKey)
	}
	require.Len(t, got, 140)
	assert.EqualValues(t, 249, got[0])
	assert.EqualValues(t, 10, got[139])

	_, err = db.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{Start: []byte("b"), End: []byte("a")}}})
	assert.ErrorIs(t, err, ErrInvalidRange)
	_, err = db.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, OrderBy: []coproc.Order{{Col: "x"}}})
	assert.ErrorIs(t, err, coproc.ErrInvalidRequest)
	t.Log(err)
}

// countRequest counts every row: a request that ends in one step over a
// few rows.
var countRequest = &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}}

func setRows(t *testing.T, db *DB, n int) {
	t.Helper()
	for i := range n {
		row, err := coproc.EncodeRow(map[string]any{"amount": i})
		require.NoError(t, err)
		require.NoError(t, db.Set(keyN(i), row))
	}
}

// A coprocessor request's caller only waits for its answer: with a worker
// idle and nothing queued, its first step — here all of it — runs on the
// caller's goroutine.
func TestCoprocessor_RunsInlineWhenAWorkerIsIdle(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		// A slice of a minute: a slow machine must not make the step yield.
		db := openTest(t, "", &Options{InMemory: true, Workers: 1, TimeSlice: time.Minute})
		setRows(t, db, 10)
		synctest.Wait() // the worker parked: its slot is free for the caller
		require.Equal(t, 1, db.Stats().Pool.Parked)
		before := db.Stats().Pool
		resp, err := db.Coprocessor(context.Background(), countRequest)
		require.NoError(t, err)
		assert.EqualValues(t, 10, resp.Rows[0]["count(*)"])
		after := db.Stats().Pool
		assert.Equal(t, before.Inline+1, after.Inline, "the step ran on the caller")
		assert.Equal(t, before.Steps+1, after.Steps)
	})
}

// A request that a worker finishes while its caller waits in Wait gets
// the worker's P at once (readpool.Awaited), as a Get's caller does.
func TestCoprocessor_CallerHandoffWhenAWorkerCompletesIt(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		db, release := openSaturated(t, Options{RowCacheSize: -1})
		setRows(t, db, 10)
		s := queueBehindTheHeldRead(t, db, release, func() {
			resp, err := db.Coprocessor(context.Background(), countRequest)
			if assert.NoError(t, err) {
				assert.EqualValues(t, 10, resp.Rows[0]["count(*)"])
			}
		})
		// One hand-off for the request; one for the held Get, whose caller
		// the worker readied while the request was live, unless that Get ran
		// inline (the worker parked at the time): nobody to hand to then.
		require.LessOrEqual(t, s.Inline, int64(1))
		assert.Equal(t, 2-s.Inline, s.CallerHandoffs)
	})
}

package coproctest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// rowsOf stores each map as a row at Key(i), as a store would hold it.
func rowsOf(t *testing.T, maps ...map[string]any) []Row {
	t.Helper()
	var rows []Row
	for i, m := range maps {
		enc, err := coproc.EncodeRow(m)
		require.NoError(t, err)
		cols, err := coproc.DecodeRow(enc)
		require.NoError(t, err)
		rows = append(rows, Row{Key: Key(i), Value: enc, Cols: cols})
	}
	return rows
}

func col(c string) *coproc.Expr { return &coproc.Expr{Op: "col", Col: c} }
func lit(v any) *coproc.Expr    { return &coproc.Expr{Op: "const", Value: v} }

func TestReference_Cases(t *testing.T) {
	const maxI = int64(math.MaxInt64)
	rows := rowsOf(t,
		map[string]any{"n": 1, "s": "a"},
		map[string]any{"n": 1.0, "s": []byte("a")},
		map[string]any{"n": maxI, "s": "b"},
		map[string]any{"n": maxI},
		map[string]any{},
		map[string]any{"n": nil},
	)
	every := []coproc.KeyRange{{}}
	for _, c := range []struct {
		name string
		req  coproc.Request
		want []map[string]any
		agg  bool
		over bool
	}{
		{name: "eq by value across types", req: coproc.Request{Ranges: every, Columns: []string{coproc.KeyColumn},
			Filter: &coproc.Expr{Op: "eq", Args: []*coproc.Expr{col("n"), lit(1)}}},
			want: []map[string]any{{"_key": Key(0)}, {"_key": Key(1)}}},
		{name: "a range, descending", req: coproc.Request{Ranges: []coproc.KeyRange{{Start: Key(1), End: Key(3)}}, Desc: true, Columns: []string{"s"}},
			want: []map[string]any{{"s": "b"}, {"s": []byte("a")}}},
		{name: "a missing column projects as null", req: coproc.Request{Ranges: []coproc.KeyRange{{End: Key(1)}}, Columns: []string{"zz"}},
			want: []map[string]any{{"zz": nil}}},
		{name: "every column and the key", req: coproc.Request{Ranges: []coproc.KeyRange{{Start: Key(4), End: Key(5)}}},
			want: []map[string]any{{"_key": Key(4)}}},
		{name: "string and bytes are one group; missing and null another", agg: true,
			req:  coproc.Request{Ranges: every, GroupBy: []string{"s"}, Aggs: []coproc.Agg{{Func: "count"}, {Func: "count", Col: "n", As: "ns"}}},
			want: []map[string]any{{"s": "a", "count(*)": int64(2), "ns": int64(2)}, {"s": "b", "count(*)": int64(1), "ns": int64(1)}, {"s": nil, "count(*)": int64(3), "ns": int64(1)}}},
		{name: "an exact sum past int64 overflows", agg: true, over: true,
			req:  coproc.Request{Ranges: []coproc.KeyRange{{Start: Key(2)}}, Aggs: []coproc.Agg{{Func: "sum", Col: "n"}}},
			want: []map[string]any{{"sum(n)": nil}}},
		{name: "a float makes the sum a float", agg: true,
			req:  coproc.Request{Ranges: []coproc.KeyRange{{End: Key(2)}}, Aggs: []coproc.Agg{{Func: "sum", Col: "n"}, {Func: "min", Col: "s"}}},
			want: []map[string]any{{"sum(n)": 2.0, "min(s)": "a"}}},
		{name: "aggregates over no row are one row", agg: true,
			req:  coproc.Request{Ranges: []coproc.KeyRange{{Start: Key(9)}}, Aggs: []coproc.Agg{{Func: "count"}, {Func: "max", Col: "n"}}},
			want: []map[string]any{{"count(*)": int64(0), "max(n)": nil}}},
		{name: "top-N, ties in scan order", req: coproc.Request{Ranges: every, OrderBy: []coproc.Order{{Col: "n", Desc: true}}, Limit: 3, Columns: []string{coproc.KeyColumn}},
			want: []map[string]any{{"_key": Key(2)}, {"_key": Key(3)}, {"_key": Key(0)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ans := Reference(&c.req, rows)
			assert.Equal(t, len(inRanges(&c.req, rows)), ans.Scanned)
			assert.Equal(t, c.agg, ans.Aggregate)
			assert.Equal(t, c.over, ans.Overflow)
			require.Len(t, ans.Rows, len(c.want), "%v", ans.Rows)
			for i := range c.want {
				// The reference's row first: it may hold a float within a tolerance.
				assert.True(t, RowEqual(ans.Rows[i], c.want[i]), "row %d: want %s, got %s", i, RowString(c.want[i]), RowString(ans.Rows[i]))
			}
		})
	}
}

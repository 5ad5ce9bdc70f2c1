package kv

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

var (
	diffSeed     = flag.Uint64("coproc-seed", 0, "seed of TestCoprocessor_Differential (0 = from the clock); a failing run prints its seed")
	diffRequests = flag.Int("coproc-requests", 2400, "random requests of TestCoprocessor_Differential; raise it for a long run")
)

// requestsPerDataset is how many random requests each random dataset of
// TestCoprocessor_Differential answers.
const requestsPerDataset = 400

// TestCoprocessor_Differential checks db.Coprocessor against a naive
// evaluator written here from the documented semantics, over db.Scan and
// coproc.DecodeRow: random datasets of mixed-type rows, random requests
// (filters over every op, projections, group-by with every aggregate,
// top-N, limits, paging, both directions, several ranges). A quarter of the
// requests go through CoprocessorRaw and the msgpack codec instead.
//
// Replay a failure with -coproc-seed=N (the seed is logged); run longer with
// -coproc-requests=N.
func TestCoprocessor_Differential(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -coproc-seed=%d)", seed, seed)
	total := *diffRequests
	for ds := 0; total > 0; ds++ {
		n := min(total, requestsPerDataset)
		total -= n
		t.Run(fmt.Sprintf("dataset%d", ds), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(ds)))
			db := openTest(t, "", &Options{InMemory: true, Workers: 2})
			d := newDiffData(t, db, rng)
			var stats diffStats
			for i := range n {
				req := d.request(rng)
				raw := rng.IntN(4) == 0
				if !d.check(t, fmt.Sprintf("seed %d dataset %d request %d (raw %v)", seed, ds, i, raw), req, raw, &stats) {
					return // one failure says enough; the rest would repeat it
				}
			}
			t.Logf("%d rows; %d requests: %d row scans, %d top-N, %d aggregates, %d paged (%d pages), %d raw, %d overflow errors, %d rows compared",
				len(d.keys), n, stats.scans, stats.topN, stats.aggs, stats.paged, stats.pages, stats.raw, stats.overflows, stats.rows)
		})
	}
}

type diffStats struct {
	scans, topN, aggs, paged, pages, raw, overflows, rows int
}

// diffData is a random dataset as the store holds it, read back once
// through db.Scan and coproc.DecodeRow.
type diffData struct {
	db   *DB
	keys [][]byte // ascending
	rows []map[string]any
	span int // keys are keyN(i) for i in [0, span)
}

// Columns of the random rows. "b" mixes every kind; "g" mixes numbers of
// every width, large ones included, so that its sums overflow or turn float.
var diffColumns = []string{"a", "b", "c", "d", "e", "f", "g", "h"}

func newDiffData(t *testing.T, db *DB, rng *rand.Rand) *diffData {
	t.Helper()
	n := 200 + rng.IntN(1800)
	span := n + rng.IntN(n+1)
	idx := rng.Perm(span)[:n]
	slices.Sort(idx)
	b := db.NewBatch()
	for i, j := range idx {
		row := map[string]any{}
		for _, c := range diffColumns {
			switch rng.IntN(12) {
			case 0:
				continue // missing
			case 1:
				row[c] = nil
				continue
			}
			row[c] = diffValue(rng, c)
		}
		enc, err := coproc.EncodeRow(row)
		require.NoError(t, err)
		b.Set(keyN(j), enc)
		if b.Len() == 500 || i == n-1 {
			require.NoError(t, db.Apply(b))
			b = db.NewBatch()
		}
	}
	d := &diffData{db: db, span: span}
	it := db.Scan(context.Background(), nil, nil, nil)
	for k, v := range it.All() {
		row, err := coproc.DecodeRow(v)
		require.NoError(t, err)
		d.keys = append(d.keys, bytes.Clone(k))
		d.rows = append(d.rows, row)
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	require.Len(t, d.keys, n)
	return d
}

var (
	diffStrings = []string{"", "a", "ab", "abc", "b", "ba", "r1", "x"}
	diffBytes   = []string{"a", "ab", "b", "\x00", "\x00a", "\xff", "r1"}
)

// diffValue is a random value of column c.
func diffValue(rng *rand.Rand, c string) any {
	switch c {
	case "a":
		return rng.IntN(41) - 20
	case "b":
		return diffScalar(rng)
	case "c":
		if rng.IntN(10) == 0 {
			return []byte(fmt.Sprintf("r%d", rng.IntN(7))) // same group as the string
		}
		return fmt.Sprintf("r%d", rng.IntN(7))
	case "d":
		if rng.IntN(4) == 0 {
			return float64(rng.IntN(21) - 10) // integral: groups with ints
		}
		return math.Round(rng.NormFloat64()*10000) / 100
	case "e":
		b := make([]byte, 1+rng.IntN(3))
		for i := range b {
			b[i] = "ab\x00\xff"[rng.IntN(4)]
		}
		return b
	case "f":
		return rng.IntN(2) == 0
	case "g":
		switch rng.IntN(40) {
		case 0:
			return uint64(math.MaxInt64) + 1 + rng.Uint64N(1000)
		case 1:
			return int64(math.MaxInt64) - rng.Int64N(1000)
		case 2:
			return int64(math.MinInt64) + rng.Int64N(1000)
		case 3, 4:
			return rng.Float64()*2000 - 1000
		}
		return rng.Int64N(2_000_001) - 1_000_000
	case "h":
		return rng.IntN(2001) - 1000
	}
	panic("unknown column " + c)
}

// diffScalar is a random value of any kind, small enough to collide with
// other rows' values and with constants.
func diffScalar(rng *rand.Rand) any {
	switch rng.IntN(10) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2, 3:
		return int64(rng.IntN(11) - 5)
	case 4:
		return float64(rng.IntN(11)-5) / 2
	case 5:
		return diffStrings[rng.IntN(len(diffStrings))]
	case 6:
		return []byte(diffBytes[rng.IntN(len(diffBytes))])
	case 7:
		if rng.IntN(4) == 0 {
			return uint64(math.MaxInt64) + 1 + rng.Uint64N(3)
		}
		return rng.IntN(5) // a Go int: normalised
	case 8:
		return uint8(rng.IntN(6)) // a narrow unsigned: normalised
	}
	return diffStrings[rng.IntN(len(diffStrings))]
}

// bound is a random range bound: a stored key, a missing one, or a key
// between them.
func (d *diffData) bound(rng *rand.Rand) []byte {
	j := rng.IntN(d.span + 2)
	k := keyN(j)
	switch rng.IntN(6) {
	case 0:
		return append(k, 0) // just after keyN(j)
	case 1:
		return k[:len(k)-1] // before every keyN(j*10+x)
	}
	return k
}

// request is a random valid request.
func (d *diffData) request(rng *rand.Rand) *coproc.Request {
	req := &coproc.Request{Desc: rng.IntN(2) == 0}
	nr := 1 + rng.IntN(4)
	if rng.IntN(8) == 0 {
		req.Ranges = []coproc.KeyRange{{}}
	} else {
		bs := make([][]byte, 2*nr)
		for i := range bs {
			bs[i] = d.bound(rng)
		}
		slices.SortFunc(bs, bytes.Compare)
		for i := range nr {
			req.Ranges = append(req.Ranges, coproc.KeyRange{Start: bs[2*i], End: bs[2*i+1]})
		}
		if rng.IntN(4) == 0 {
			req.Ranges[0].Start = nil
		}
		if rng.IntN(4) == 0 {
			req.Ranges[nr-1].End = nil
		}
	}
	if rng.IntN(10) < 7 {
		req.Filter = diffExpr(rng, rng.IntN(4))
	}
	allCols := append([]string{coproc.KeyColumn, "zz"}, diffColumns...)
	pickCols := func(max int) []string {
		var cols []string
		for _, i := range rng.Perm(len(allCols))[:1+rng.IntN(max)] {
			cols = append(cols, allCols[i])
		}
		return cols
	}
	switch k := rng.IntN(10); {
	case k < 4: // row scan
		if rng.IntN(3) > 0 {
			req.Columns = pickCols(5)
		}
		if rng.IntN(3) == 0 {
			req.Limit = 1 + rng.IntN(50)
		}
		if rng.IntN(5) < 2 {
			req.PagingSize = 1 + rng.IntN(300)
		}
	case k < 6: // top-N rows
		if rng.IntN(3) > 0 {
			req.Columns = pickCols(5)
		}
		for _, c := range pickCols(2) {
			req.OrderBy = append(req.OrderBy, coproc.Order{Col: c, Desc: rng.IntN(2) == 0})
		}
		req.Limit = 1 + rng.IntN(60)
		if rng.IntN(4) == 0 {
			req.PagingSize = 1 + rng.IntN(100) // ignored with OrderBy
		}
	default: // aggregates
		groupCols := []string{"a", "b", "c", "e", "f", "d", "zz"}
		for _, i := range rng.Perm(len(groupCols))[:rng.IntN(3)] {
			req.GroupBy = append(req.GroupBy, groupCols[i])
		}
		if len(req.GroupBy) == 0 && rng.IntN(10) == 0 {
			req.GroupBy = []string{coproc.KeyColumn}
		}
		taken := map[string]bool{}
		for _, g := range req.GroupBy {
			taken[g] = true
		}
		funcs := []string{"count", "sum", "min", "max", "avg"}
		for range rng.IntN(5) {
			a := coproc.Agg{Func: funcs[rng.IntN(len(funcs))], Col: allCols[rng.IntN(len(allCols))]}
			if a.Func == "count" && rng.IntN(3) == 0 {
				a.Col = ""
			}
			if a.Col == coproc.KeyColumn && a.Func != "count" && a.Func != "min" && a.Func != "max" {
				a.Col = "h"
			}
			if rng.IntN(4) == 0 {
				a.As = fmt.Sprintf("out%d", rng.IntN(4))
			}
			if name := diffAggName(a); !taken[name] {
				taken[name] = true
				req.Aggs = append(req.Aggs, a)
			}
		}
		if len(req.Aggs) == 0 && len(req.GroupBy) == 0 {
			req.Aggs = []coproc.Agg{{Func: "count"}}
			taken["count(*)"] = true
		}
		outs := slices.Collect(func(yield func(string) bool) {
			for c := range taken {
				if !yield(c) {
					return
				}
			}
		})
		slices.Sort(outs)
		switch rng.IntN(4) {
		case 0:
			for _, i := range rng.Perm(len(outs))[:1+rng.IntN(min(2, len(outs)))] {
				req.OrderBy = append(req.OrderBy, coproc.Order{Col: outs[i], Desc: rng.IntN(2) == 0})
			}
			req.Limit = 1 + rng.IntN(10)
		case 1:
			req.Limit = 1 + rng.IntN(10)
		}
		if rng.IntN(5) == 0 {
			req.PagingSize = 1 + rng.IntN(50) // ignored with aggregates
		}
	}
	return req
}

func diffAggName(a coproc.Agg) string {
	switch {
	case a.As != "":
		return a.As
	case a.Col == "":
		return a.Func + "(*)"
	}
	return a.Func + "(" + a.Col + ")"
}

// diffExpr is a random filter of at most depth levels of and/or/not above
// its predicates.
func diffExpr(rng *rand.Rand, depth int) *coproc.Expr {
	if depth > 0 {
		switch rng.IntN(5) {
		case 0, 1:
			op := "and"
			if rng.IntN(2) == 0 {
				op = "or"
			}
			e := &coproc.Expr{Op: op}
			for range 2 + rng.IntN(2) {
				e.Args = append(e.Args, diffExpr(rng, depth-1))
			}
			return e
		case 2:
			return &coproc.Expr{Op: "not", Args: []*coproc.Expr{diffExpr(rng, depth-1)}}
		}
	}
	switch k := rng.IntN(20); {
	case k < 9:
		ops := []string{"eq", "ne", "lt", "le", "gt", "ge"}
		return &coproc.Expr{Op: ops[rng.IntN(len(ops))], Args: []*coproc.Expr{diffOperand(rng), diffOperand(rng)}}
	case k < 12:
		list := make([]any, 1+rng.IntN(5))
		for i := range list {
			list[i] = diffConst(rng)
		}
		return &coproc.Expr{Op: "in", Value: list, Args: []*coproc.Expr{diffOperand(rng)}}
	case k < 15:
		p := &coproc.Expr{Op: "const", Value: diffStrings[rng.IntN(len(diffStrings))]}
		switch rng.IntN(4) {
		case 0:
			p.Value = []byte(diffBytes[rng.IntN(len(diffBytes))])
		case 1:
			p.Value = "key0000" // a prefix of many keys
		case 2:
			p = diffOperand(rng)
		}
		if rng.IntN(8) == 0 {
			return &coproc.Expr{Op: "prefix", Args: []*coproc.Expr{p, diffColumn(rng)}}
		}
		return &coproc.Expr{Op: "prefix", Args: []*coproc.Expr{diffColumn(rng), p}}
	case k < 18:
		return &coproc.Expr{Op: "isnull", Args: []*coproc.Expr{diffOperand(rng)}}
	case k < 19:
		return diffColumn(rng) // a column as a condition: true only for a true bool
	}
	return &coproc.Expr{Op: "const", Value: diffConst(rng)}
}

func diffColumn(rng *rand.Rand) *coproc.Expr {
	cols := append([]string{coproc.KeyColumn, "zz", "a", "b"}, diffColumns...)
	return &coproc.Expr{Op: "col", Col: cols[rng.IntN(len(cols))]}
}

func diffOperand(rng *rand.Rand) *coproc.Expr {
	switch k := rng.IntN(20); {
	case k < 12:
		return diffColumn(rng)
	case k < 19:
		return &coproc.Expr{Op: "const", Value: diffConst(rng)}
	}
	return diffExpr(rng, 1) // a boolean, compared with bools
}

func diffConst(rng *rand.Rand) any {
	switch rng.IntN(8) {
	case 0:
		return fmt.Sprintf("r%d", rng.IntN(8))
	case 1:
		return int64(rng.IntN(2001) - 1000)
	case 2:
		return math.Round(rng.NormFloat64()*1000) / 100
	case 3:
		return []byte(fmt.Sprintf("key%08d", rng.IntN(3000)))
	}
	return diffScalar(rng)
}

// check runs req (through CoprocessorRaw when raw) and compares it with the
// naive answer; it reports whether they agree.
func (d *diffData) check(t *testing.T, what string, req *coproc.Request, raw bool, st *diffStats) bool {
	t.Helper()
	what += ": " + describeRequest(req)
	ctx := context.Background()
	run := func(r *coproc.Request) (*coproc.Response, error) {
		if !raw {
			return d.db.Coprocessor(ctx, r)
		}
		b, err := coproc.Encode(r)
		require.NoError(t, err, what)
		out, err := d.db.CoprocessorRaw(ctx, b)
		if err != nil {
			return nil, err
		}
		resp, err := coproc.DecodeResponse(out)
		require.NoError(t, err, what)
		return resp, nil
	}
	if raw {
		st.raw++
	}
	keys, rows := d.inRanges(req)
	want := d.answer(req, keys, rows)

	paged := req.PagingSize > 0 && len(req.Aggs) == 0 && len(req.GroupBy) == 0 && len(req.OrderBy) == 0
	var got []map[string]any
	if paged {
		st.paged++
		r := req
		for pages := 1; ; pages++ {
			if !assert.LessOrEqual(t, pages, len(keys)/req.PagingSize+2, "%s: too many pages", what) {
				return false
			}
			st.pages++
			resp, err := run(r)
			if !assert.NoError(t, err, what) {
				return false
			}
			if !assert.LessOrEqual(t, resp.Stats.RowsScanned, int64(req.PagingSize), "%s: page %d scanned more than PagingSize", what, pages) ||
				!assert.EqualValues(t, len(resp.Rows), resp.Stats.RowsReturned, what) {
				return false
			}
			if req.Limit > 0 && !assert.LessOrEqual(t, len(resp.Rows), req.Limit, "%s: page %d passes Limit", what, pages) {
				return false
			}
			got = append(got, resp.Rows...)
			if resp.ResumeKey == nil {
				break
			}
			r = r.ResumeFrom(resp.ResumeKey)
		}
		// ResumeFrom keeps the Limit: each page may return up to Limit
		// rows, so the client stops reading at Limit.
		if req.Limit > 0 && len(got) > req.Limit {
			got = got[:req.Limit]
		}
	} else {
		resp, err := run(req)
		if want.overflow {
			st.overflows++
			return assert.ErrorIs(t, err, coproc.ErrOverflow, "%s: the exact sum leaves int64", what)
		}
		if !assert.NoError(t, err, what) {
			return false
		}
		if !assert.Nil(t, resp.ResumeKey, "%s: a request that does not page returned a ResumeKey", what) ||
			!assert.EqualValues(t, len(resp.Rows), resp.Stats.RowsReturned, what) {
			return false
		}
		if req.Limit == 0 || len(req.OrderBy) > 0 || want.aggs {
			if !assert.EqualValues(t, len(keys), resp.Stats.RowsScanned, "%s: RowsScanned", what) {
				return false
			}
		}
		got = resp.Rows
	}
	st.rows += len(got)
	switch {
	case want.aggs:
		st.aggs++
		return d.compareGroups(t, what, req, want.rows, got)
	case len(req.OrderBy) > 0:
		st.topN++
	default:
		st.scans++
	}
	if !assert.Len(t, got, len(want.rows), "%s: rows", what) {
		d.logDiff(t, want.rows, got)
		return false
	}
	for i := range got {
		if !rowEqual(want.rows[i], got[i]) {
			assert.Fail(t, "rows differ", "%s: row %d: want %s, got %s", what, i, rowString(want.rows[i]), rowString(got[i]))
			d.logDiff(t, want.rows, got)
			return false
		}
	}
	return true
}

func (d *diffData) logDiff(t *testing.T, want, got []map[string]any) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		if i >= 20 {
			t.Logf("…")
			return
		}
		var w, g string
		if i < len(want) {
			w = rowString(want[i])
		}
		if i < len(got) {
			g = rowString(got[i])
		}
		t.Logf("%3d want %s\n    got  %s", i, w, g)
	}
}

// compareGroups compares aggregate rows as a multiset, matched by their
// group columns; with OrderBy the order columns must also come in the same
// order (ties in first-seen order); with Limit and no order, the groups
// returned must be Limit of the groups.
func (d *diffData) compareGroups(t *testing.T, what string, req *coproc.Request, want, got []map[string]any) bool {
	t.Helper()
	byGroup := map[string]map[string]any{}
	for _, w := range want {
		byGroup[naiveGroupKey(req.GroupBy, func(c string) any { return w[c] })] = w
	}
	if len(req.OrderBy) > 0 || req.Limit == 0 {
		if !assert.Len(t, got, len(want), "%s: groups", what) {
			d.logDiff(t, want, got)
			return false
		}
	} else if !assert.Len(t, got, min(req.Limit, len(byGroup)), "%s: groups under Limit", what) {
		return false
	}
	seen := map[string]bool{}
	for i, g := range got {
		k := naiveGroupKey(req.GroupBy, func(c string) any { return g[c] })
		w, ok := byGroup[k]
		if !assert.True(t, ok, "%s: unexpected group %s", what, rowString(g)) ||
			!assert.False(t, seen[k], "%s: group %s twice", what, rowString(g)) {
			d.logDiff(t, want, got)
			return false
		}
		seen[k] = true
		if !rowEqual(w, g) {
			assert.Fail(t, "groups differ", "%s: want %s, got %s", what, rowString(w), rowString(g))
			return false
		}
		if len(req.OrderBy) > 0 {
			for _, o := range req.OrderBy {
				if !valueEqual(want[i][o.Col], g[o.Col]) {
					assert.Fail(t, "top-N order differs", "%s: row %d: want %s, got %s", what, i, rowString(want[i]), rowString(g))
					d.logDiff(t, want, got)
					return false
				}
			}
		}
	}
	return true
}

// inRanges is the rows that req's ranges hold, in scan order.
func (d *diffData) inRanges(req *coproc.Request) (keys [][]byte, rows []map[string]any) {
	for _, kr := range req.Ranges {
		lo, hi := 0, len(d.keys)
		if kr.Start != nil {
			lo = sort.Search(len(d.keys), func(i int) bool { return bytes.Compare(d.keys[i], kr.Start) >= 0 })
		}
		if kr.End != nil {
			hi = sort.Search(len(d.keys), func(i int) bool { return bytes.Compare(d.keys[i], kr.End) >= 0 })
		}
		for i := lo; i < hi; i++ {
			keys = append(keys, d.keys[i])
			rows = append(rows, d.rows[i])
		}
	}
	if req.Desc {
		slices.Reverse(keys)
		slices.Reverse(rows)
	}
	return keys, rows
}

// diffAnswer is the naive answer to a request.
type diffAnswer struct {
	rows     []map[string]any
	aggs     bool // rows are groups
	overflow bool // an integer sum leaves int64: the request fails
}

// answer evaluates req naively over the rows its ranges hold.
func (d *diffData) answer(req *coproc.Request, keys [][]byte, rows []map[string]any) diffAnswer {
	colOf := func(i int, c string) any {
		if c == coproc.KeyColumn {
			return keys[i]
		}
		return rows[i][c]
	}
	var sel []int
	for i := range keys {
		if req.Filter == nil || truthOf(evalNaive(req.Filter, func(c string) any { return colOf(i, c) })) {
			sel = append(sel, i)
		}
	}
	if len(req.Aggs) > 0 || len(req.GroupBy) > 0 {
		return d.aggregate(req, sel, colOf)
	}
	if len(req.OrderBy) > 0 {
		// Top-N by the rows' own values (also of columns not projected),
		// ties in scan order.
		slices.SortStableFunc(sel, func(x, y int) int {
			for _, o := range req.OrderBy {
				c := orderNaive(colOf(x, o.Col), colOf(y, o.Col))
				if o.Desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
	}
	if req.Limit > 0 && len(sel) > req.Limit {
		sel = sel[:req.Limit]
	}
	out := make([]map[string]any, 0, len(sel))
	for _, i := range sel {
		m := map[string]any{}
		if req.Columns == nil {
			for c, v := range rows[i] {
				m[c] = v
			}
			m[coproc.KeyColumn] = keys[i]
		} else {
			for _, c := range req.Columns {
				m[c] = colOf(i, c)
			}
		}
		out = append(out, m)
	}
	return diffAnswer{rows: out}
}

// naiveAgg folds one aggregate of one group.
type naiveAgg struct {
	count, nums int64
	sum         big.Int
	isFloat     bool
	sumF        float64
	sumAbs      float64 // for the tolerance of float sums
	min, max    any
}

type naiveGroup struct {
	keys []any
	aggs []naiveAgg
}

func (d *diffData) aggregate(req *coproc.Request, sel []int, colOf func(int, string) any) diffAnswer {
	groups := map[string]*naiveGroup{}
	var order []*naiveGroup // first seen first
	for _, i := range sel {
		k := naiveGroupKey(req.GroupBy, func(c string) any { return colOf(i, c) })
		g := groups[k]
		if g == nil {
			g = &naiveGroup{aggs: make([]naiveAgg, len(req.Aggs))}
			for _, c := range req.GroupBy {
				g.keys = append(g.keys, colOf(i, c))
			}
			groups[k] = g
			order = append(order, g)
		}
		for j, a := range req.Aggs {
			s := &g.aggs[j]
			if a.Col == "" {
				s.count++
				continue
			}
			v := colOf(i, a.Col)
			if v == nil {
				continue
			}
			s.count++
			switch a.Func {
			case "sum", "avg":
				f, exact, ok := numberOf(v)
				if !ok {
					continue // not a number: skipped
				}
				s.nums++
				s.sumF += f
				s.sumAbs += math.Abs(f)
				if exact == nil {
					s.isFloat = true
				} else {
					s.sum.Add(&s.sum, exact)
				}
			case "min":
				if s.min == nil || orderNaive(v, s.min) < 0 {
					s.min = v
				}
			case "max":
				if s.max == nil || orderNaive(v, s.max) > 0 {
					s.max = v
				}
			}
		}
	}
	if len(req.GroupBy) == 0 && len(order) == 0 {
		order = append(order, &naiveGroup{aggs: make([]naiveAgg, len(req.Aggs))})
	}
	ans := diffAnswer{aggs: true}
	for _, g := range order {
		m := map[string]any{}
		for i, c := range req.GroupBy {
			m[c] = g.keys[i]
		}
		for j, a := range req.Aggs {
			s := &g.aggs[j]
			var v any
			switch a.Func {
			case "count":
				v = s.count
			case "sum":
				switch {
				case s.nums == 0:
				case s.isFloat:
					v = approx{s.sumF, 1e-9 * (s.sumAbs + 1)}
				case s.sum.IsInt64():
					v = s.sum.Int64()
				default:
					ans.overflow = true
				}
			case "avg":
				if s.nums > 0 {
					avg := s.sumF / float64(s.nums)
					v = approx{avg, 1e-9 * (s.sumAbs/float64(s.nums) + 1)}
				}
			case "min":
				v = s.min
			case "max":
				v = s.max
			}
			m[diffAggName(a)] = v
		}
		ans.rows = append(ans.rows, m)
	}
	if len(req.OrderBy) > 0 {
		slices.SortStableFunc(ans.rows, func(x, y map[string]any) int {
			for _, o := range req.OrderBy {
				c := orderNaive(approxValue(x[o.Col]), approxValue(y[o.Col]))
				if o.Desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
		if len(ans.rows) > req.Limit {
			ans.rows = ans.rows[:req.Limit]
		}
	}
	return ans
}

// approx is an expected float known up to a tolerance (a float sum or an
// average, whose rounding depends on the order of the additions).
type approx struct{ v, tol float64 }

func approxValue(v any) any {
	if a, ok := v.(approx); ok {
		return a.v
	}
	return v
}

// evalNaive evaluates e with col giving a column's value (nil when missing).
func evalNaive(e *coproc.Expr, col func(string) any) any {
	switch e.Op {
	case "col":
		return col(e.Col)
	case "const":
		return normNaive(e.Value)
	case "and":
		for _, a := range e.Args {
			if !truthOf(evalNaive(a, col)) {
				return false
			}
		}
		return true
	case "or":
		for _, a := range e.Args {
			if truthOf(evalNaive(a, col)) {
				return true
			}
		}
		return false
	case "not":
		return !truthOf(evalNaive(e.Args[0], col))
	case "isnull":
		return evalNaive(e.Args[0], col) == nil
	case "in":
		v := evalNaive(e.Args[0], col)
		for _, x := range e.Value.([]any) {
			if c, ok := compareNaive(v, normNaive(x)); ok && c == 0 {
				return true
			}
		}
		return false
	case "prefix":
		s, ok1 := bytesOf(evalNaive(e.Args[0], col))
		p, ok2 := bytesOf(evalNaive(e.Args[1], col))
		return ok1 && ok2 && bytes.HasPrefix(s, p)
	}
	c, ok := compareNaive(evalNaive(e.Args[0], col), evalNaive(e.Args[1], col))
	if !ok {
		return false
	}
	switch e.Op {
	case "eq":
		return c == 0
	case "ne":
		return c != 0
	case "lt":
		return c < 0
	case "le":
		return c <= 0
	case "gt":
		return c > 0
	case "ge":
		return c >= 0
	}
	panic("unknown op " + e.Op)
}

func truthOf(v any) bool { b, ok := v.(bool); return ok && b }

// normNaive maps the Go types the generator uses for constants to the
// types rows decode to.
func normNaive(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
	}
	return v
}

// numberOf returns v as a float64 and, for an integer, exactly; ok is false
// for a value that is not a number.
func numberOf(v any) (f float64, exact *big.Int, ok bool) {
	switch x := normNaive(v).(type) {
	case int64:
		return float64(x), big.NewInt(x), true
	case uint64:
		return float64(x), new(big.Int).SetUint64(x), true
	case float64:
		return x, nil, true
	}
	return 0, nil, false
}

func bytesOf(v any) ([]byte, bool) {
	switch x := v.(type) {
	case string:
		return []byte(x), true
	case []byte:
		return x, true
	}
	return nil, false
}

// compareNaive orders two values of comparable kinds: numbers exactly by
// value whatever their types, strings and bytes bytewise, bools false
// first. ok is false for null or different kinds.
func compareNaive(a, b any) (int, bool) {
	a, b = normNaive(a), normNaive(b)
	if _, _, ok := numberOf(a); ok {
		if _, _, ok := numberOf(b); !ok {
			return 0, false
		}
		return compareNumbers(a, b), true
	}
	if x, ok := bytesOf(a); ok {
		y, ok := bytesOf(b)
		if !ok {
			return 0, false
		}
		return bytes.Compare(x, y), true
	}
	if x, ok := a.(bool); ok {
		y, ok := b.(bool)
		if !ok {
			return 0, false
		}
		switch {
		case x == y:
			return 0, true
		case !x:
			return -1, true
		}
		return 1, true
	}
	return 0, false
}

func compareNumbers(a, b any) int {
	if x, ok := a.(int64); ok {
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y)
		}
	}
	if x, ok := a.(float64); ok {
		if y, ok := b.(float64); ok {
			return cmp.Compare(x, y)
		}
	}
	return bigOf(a).Cmp(bigOf(b))
}

func bigOf(v any) *big.Float {
	switch x := v.(type) {
	case int64:
		return new(big.Float).SetInt64(x)
	case uint64:
		return new(big.Float).SetUint64(x)
	case float64:
		return new(big.Float).SetFloat64(x)
	}
	panic(fmt.Sprintf("not a number: %T", v))
}

// orderNaive is the sort order: null, bools, numbers, strings and bytes.
func orderNaive(a, b any) int {
	rank := func(v any) int {
		if v == nil {
			return 0
		}
		if _, ok := v.(bool); ok {
			return 1
		}
		if _, _, ok := numberOf(v); ok {
			return 2
		}
		return 3
	}
	if c := cmp.Compare(rank(a), rank(b)); c != 0 {
		return c
	}
	c, _ := compareNaive(a, b)
	return c
}

// canonical is a value's identity for grouping: numbers by exact value (1
// and 1.0 are one group), strings and bytes by their bytes.
func canonical(v any) string {
	switch x := normNaive(v).(type) {
	case nil:
		return "n"
	case bool:
		return "b" + strconv.FormatBool(x)
	case int64:
		return "i" + strconv.FormatInt(x, 10)
	case uint64:
		return "i" + strconv.FormatUint(x, 10)
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			i, _ := new(big.Float).SetFloat64(x).Int(nil)
			return "i" + i.String()
		}
		return "f" + strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return "s" + x
	case []byte:
		return "s" + string(x)
	}
	return fmt.Sprintf("?%T:%v", v, v)
}

func naiveGroupKey(cols []string, get func(string) any) string {
	var b strings.Builder
	for _, c := range cols {
		s := canonical(get(c))
		fmt.Fprintf(&b, "%d:%s", len(s), s)
	}
	return b.String()
}

// rowEqual compares a naive row with a returned one: the same columns, each
// value equal by valueEqual.
func rowEqual(want, got map[string]any) bool {
	if len(want) != len(got) {
		return false
	}
	for c, w := range want {
		g, ok := got[c]
		if !ok || !valueEqual(w, g) {
			return false
		}
	}
	return true
}

// valueEqual: numbers by value whatever their types (approx within its
// tolerance), strings and bytes of the same kind and bytes, bools, nulls.
func valueEqual(want, got any) bool {
	if a, ok := want.(approx); ok {
		f, _, ok := numberOf(got)
		return ok && math.Abs(f-a.v) <= a.tol
	}
	want, got = normNaive(want), normNaive(got)
	if _, _, ok := numberOf(want); ok {
		if _, _, ok := numberOf(got); !ok {
			return false
		}
		return compareNumbers(want, got) == 0
	}
	switch w := want.(type) {
	case nil:
		return got == nil
	case bool:
		g, ok := got.(bool)
		return ok && g == w
	case string:
		g, ok := got.(string)
		return ok && g == w
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(g, w)
	}
	return false
}

func rowString(m map[string]any) string {
	cols := make([]string, 0, len(m))
	for c := range m {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	var b strings.Builder
	b.WriteString("{")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s:%s", c, valueString(m[c]))
	}
	b.WriteString("}")
	return b.String()
}

func valueString(v any) string {
	switch x := v.(type) {
	case []byte:
		return fmt.Sprintf("b%q", x)
	case string:
		return strconv.Quote(x)
	case approx:
		return fmt.Sprintf("~%g", x.v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func exprString(e *coproc.Expr) string {
	if e == nil {
		return "nil"
	}
	switch e.Op {
	case "col":
		return e.Col
	case "const":
		return valueString(e.Value)
	}
	var args []string
	for _, a := range e.Args {
		args = append(args, exprString(a))
	}
	if e.Op == "in" {
		var list []string
		for _, v := range e.Value.([]any) {
			list = append(list, valueString(v))
		}
		args = append(args, "["+strings.Join(list, " ")+"]")
	}
	return e.Op + "(" + strings.Join(args, ", ") + ")"
}

func describeRequest(r *coproc.Request) string {
	var b strings.Builder
	b.WriteString("ranges")
	for _, kr := range r.Ranges {
		fmt.Fprintf(&b, " [%q,%q)", kr.Start, kr.End)
	}
	if r.Filter != nil {
		fmt.Fprintf(&b, " filter %s", exprString(r.Filter))
	}
	if r.Columns != nil {
		fmt.Fprintf(&b, " columns %q", r.Columns)
	}
	if r.GroupBy != nil {
		fmt.Fprintf(&b, " groupby %q", r.GroupBy)
	}
	if r.Aggs != nil {
		fmt.Fprintf(&b, " aggs %+v", r.Aggs)
	}
	if r.OrderBy != nil {
		fmt.Fprintf(&b, " orderby %+v", r.OrderBy)
	}
	fmt.Fprintf(&b, " limit %d paging %d desc %v", r.Limit, r.PagingSize, r.Desc)
	return b.String()
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

package coproctest

import (
	"bytes"
	"math"
	"math/big"
	"slices"
	"sort"

	"github.com/coopkv/coopkv/coproc"
)

// Answer is the reference answer to a request: what the coprocessor
// returns for it, unpaged.
type Answer struct {
	// Rows are the rows, projected, in order — or, with Aggregate, the
	// groups, in the order they were first seen (or by OrderBy). A float
	// sum or average is held within a tolerance (its rounding depends on
	// the order of the additions): compare with RowEqual.
	Rows []map[string]any
	// Aggregate says Rows are groups: unordered unless OrderBy orders
	// them, and limited to any Limit of them unless ordered.
	Aggregate bool
	// Overflow says an exact integer sum leaves int64: the request fails
	// with coproc.ErrOverflow.
	Overflow bool
	// Scanned is how many rows the request's ranges hold, which an
	// unpaged request without a Limit (or with an order or aggregates)
	// scans.
	Scanned int
}

// Reference answers req over rows, which must be ascending by key (a
// Dataset's), as the documentation of coproc.Request says: the rows in
// its ranges, in scan order, that pass its filter; then aggregated by
// GroupBy, or ordered by OrderBy (ties in scan order), or neither; then
// cut to Limit and projected to Columns. It ignores PagingSize: a paged
// answer, its pages concatenated, is the unpaged one.
func Reference(req *coproc.Request, rows []Row) Answer {
	in := inRanges(req, rows)
	colOf := func(i int, c string) any {
		if c == coproc.KeyColumn {
			return in[i].Key
		}
		return in[i].Cols[c]
	}
	var sel []int
	for i := range in {
		if req.Filter == nil || truthOf(eval(req.Filter, func(c string) any { return colOf(i, c) })) {
			sel = append(sel, i)
		}
	}
	if len(req.Aggs) > 0 || len(req.GroupBy) > 0 {
		ans := aggregate(req, sel, colOf)
		ans.Scanned = len(in)
		return ans
	}
	if len(req.OrderBy) > 0 {
		// Top-N by the rows' own values (also of columns not projected),
		// ties in scan order.
		slices.SortStableFunc(sel, func(x, y int) int {
			for _, o := range req.OrderBy {
				c := order(colOf(x, o.Col), colOf(y, o.Col))
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
			for c, v := range in[i].Cols {
				m[c] = v
			}
			m[coproc.KeyColumn] = in[i].Key
		} else {
			for _, c := range req.Columns {
				m[c] = colOf(i, c)
			}
		}
		out = append(out, m)
	}
	return Answer{Rows: out, Scanned: len(in)}
}

// inRanges is the rows that req's ranges hold, in scan order.
func inRanges(req *coproc.Request, rows []Row) []Row {
	var in []Row
	for _, kr := range req.Ranges {
		lo, hi := 0, len(rows)
		if kr.Start != nil {
			lo = sort.Search(len(rows), func(i int) bool { return bytes.Compare(rows[i].Key, kr.Start) >= 0 })
		}
		if kr.End != nil {
			hi = sort.Search(len(rows), func(i int) bool { return bytes.Compare(rows[i].Key, kr.End) >= 0 })
		}
		if lo < hi {
			in = append(in, rows[lo:hi]...)
		}
	}
	if req.Desc {
		slices.Reverse(in)
	}
	return in
}

// aggState folds one aggregate of one group.
type aggState struct {
	count, nums int64
	sum         big.Int
	isFloat     bool
	sumF        float64
	sumAbs      float64 // for the tolerance of float sums
	min, max    any
}

type group struct {
	keys []any
	aggs []aggState
}

// aggregate folds the selected rows into req's groups.
func aggregate(req *coproc.Request, sel []int, colOf func(int, string) any) Answer {
	groups := map[string]*group{}
	var seen []*group // first seen first
	for _, i := range sel {
		k := groupKey(req.GroupBy, func(c string) any { return colOf(i, c) })
		g := groups[k]
		if g == nil {
			g = &group{aggs: make([]aggState, len(req.Aggs))}
			for _, c := range req.GroupBy {
				g.keys = append(g.keys, colOf(i, c))
			}
			groups[k] = g
			seen = append(seen, g)
		}
		for j, a := range req.Aggs {
			g.aggs[j].add(a, colOf(i, a.Col))
		}
	}
	if len(req.GroupBy) == 0 && len(seen) == 0 {
		seen = append(seen, &group{aggs: make([]aggState, len(req.Aggs))})
	}
	ans := Answer{Aggregate: true}
	for _, g := range seen {
		m := map[string]any{}
		for i, c := range req.GroupBy {
			m[c] = g.keys[i]
		}
		for j, a := range req.Aggs {
			v, overflow := g.aggs[j].result(a)
			ans.Overflow = ans.Overflow || overflow
			m[aggName(a)] = v
		}
		ans.Rows = append(ans.Rows, m)
	}
	if len(req.OrderBy) > 0 {
		slices.SortStableFunc(ans.Rows, func(x, y map[string]any) int {
			for _, o := range req.OrderBy {
				c := order(approxValue(x[o.Col]), approxValue(y[o.Col]))
				if o.Desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
		if len(ans.Rows) > req.Limit {
			ans.Rows = ans.Rows[:req.Limit]
		}
	}
	return ans
}

// add folds v, the value of a's column in a row (nil when missing), into s.
func (s *aggState) add(a coproc.Agg, v any) {
	if a.Col == "" {
		s.count++
		return
	}
	if v == nil {
		return
	}
	s.count++
	switch a.Func {
	case "sum", "avg":
		f, exact, ok := numberOf(v)
		if !ok {
			return // not a number: skipped
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
		if s.min == nil || order(v, s.min) < 0 {
			s.min = v
		}
	case "max":
		if s.max == nil || order(v, s.max) > 0 {
			s.max = v
		}
	}
}

// result is a's value for the group; overflow when it is an integer sum
// that leaves int64.
func (s *aggState) result(a coproc.Agg) (v any, overflow bool) {
	switch a.Func {
	case "count":
		return s.count, false
	case "sum":
		switch {
		case s.nums == 0:
		case s.isFloat:
			return approx{s.sumF, 1e-9 * (s.sumAbs + 1)}, false
		case s.sum.IsInt64():
			return s.sum.Int64(), false
		default:
			return nil, true
		}
	case "avg":
		if s.nums > 0 {
			avg := s.sumF / float64(s.nums)
			return approx{avg, 1e-9 * (s.sumAbs/float64(s.nums) + 1)}, false
		}
	case "min":
		return s.min, false
	case "max":
		return s.max, false
	}
	return nil, false
}

// eval evaluates e with col giving a column's value (nil when missing).
func eval(e *coproc.Expr, col func(string) any) any {
	switch e.Op {
	case "col":
		return col(e.Col)
	case "const":
		return normalize(e.Value)
	case "and":
		for _, a := range e.Args {
			if !truthOf(eval(a, col)) {
				return false
			}
		}
		return true
	case "or":
		for _, a := range e.Args {
			if truthOf(eval(a, col)) {
				return true
			}
		}
		return false
	case "not":
		return !truthOf(eval(e.Args[0], col))
	case "isnull":
		return eval(e.Args[0], col) == nil
	case "in":
		v := eval(e.Args[0], col)
		for _, x := range e.Value.([]any) {
			if c, ok := compare(v, normalize(x)); ok && c == 0 {
				return true
			}
		}
		return false
	case "prefix":
		s, ok1 := bytesOf(eval(e.Args[0], col))
		p, ok2 := bytesOf(eval(e.Args[1], col))
		return ok1 && ok2 && bytes.HasPrefix(s, p)
	}
	c, ok := compare(eval(e.Args[0], col), eval(e.Args[1], col))
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

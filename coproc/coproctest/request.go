package coproctest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/coopkv/coopkv/coproc"
)

// Request draws a random valid request over d from rng: one to four
// ranges (or every key), a filter seven times in ten, then a row scan
// (projection, Limit, paging), a top-N, or aggregates (group-by, every
// aggregate, ordered or limited), in either direction. Columns and group
// keys include the key and a column no row has.
func (d *Dataset) Request(rng *rand.Rand) *coproc.Request {
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
		req.Filter = filter(rng, rng.IntN(4))
	}
	allCols := append([]string{coproc.KeyColumn, "zz"}, Columns...)
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
		aggregates(rng, req, allCols)
	}
	return req
}

// aggregates makes req an aggregate request: up to two group columns
// (rarely the key), up to four aggregates of distinct names (count(*) when
// there would be nothing to return), and an order with a Limit, a Limit,
// or neither.
func aggregates(rng *rand.Rand, req *coproc.Request, allCols []string) {
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
		if name := aggName(a); !taken[name] {
			taken[name] = true
			req.Aggs = append(req.Aggs, a)
		}
	}
	if len(req.Aggs) == 0 && len(req.GroupBy) == 0 {
		req.Aggs = []coproc.Agg{{Func: "count"}}
		taken["count(*)"] = true
	}
	var outs []string
	for c := range taken {
		outs = append(outs, c)
	}
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

// aggName is the output column of a: its As, or e.g. "sum(x)", "count(*)".
func aggName(a coproc.Agg) string {
	switch {
	case a.As != "":
		return a.As
	case a.Col == "":
		return a.Func + "(*)"
	}
	return a.Func + "(" + a.Col + ")"
}

// bound is a random range bound: a stored key, a missing one, or a key
// between them.
func (d *Dataset) bound(rng *rand.Rand) []byte {
	j := rng.IntN(d.span + 2)
	k := Key(j)
	switch rng.IntN(6) {
	case 0:
		return append(k, 0) // just after Key(j)
	case 1:
		return k[:len(k)-1] // before every Key(j*10+x)
	}
	return k
}

// filter is a random filter of at most depth levels of and/or/not above
// its predicates.
func filter(rng *rand.Rand, depth int) *coproc.Expr {
	if depth > 0 {
		switch rng.IntN(5) {
		case 0, 1:
			op := "and"
			if rng.IntN(2) == 0 {
				op = "or"
			}
			e := &coproc.Expr{Op: op}
			for range 2 + rng.IntN(2) {
				e.Args = append(e.Args, filter(rng, depth-1))
			}
			return e
		case 2:
			return &coproc.Expr{Op: "not", Args: []*coproc.Expr{filter(rng, depth-1)}}
		}
	}
	switch k := rng.IntN(20); {
	case k < 9:
		ops := []string{"eq", "ne", "lt", "le", "gt", "ge"}
		return &coproc.Expr{Op: ops[rng.IntN(len(ops))], Args: []*coproc.Expr{operand(rng), operand(rng)}}
	case k < 12:
		list := make([]any, 1+rng.IntN(5))
		for i := range list {
			list[i] = constant(rng)
		}
		return &coproc.Expr{Op: "in", Value: list, Args: []*coproc.Expr{operand(rng)}}
	case k < 15:
		p := &coproc.Expr{Op: "const", Value: someStrings[rng.IntN(len(someStrings))]}
		switch rng.IntN(4) {
		case 0:
			p.Value = []byte(someBytes[rng.IntN(len(someBytes))])
		case 1:
			p.Value = "key0000" // a prefix of many keys
		case 2:
			p = operand(rng)
		}
		if rng.IntN(8) == 0 {
			return &coproc.Expr{Op: "prefix", Args: []*coproc.Expr{p, column(rng)}}
		}
		return &coproc.Expr{Op: "prefix", Args: []*coproc.Expr{column(rng), p}}
	case k < 18:
		return &coproc.Expr{Op: "isnull", Args: []*coproc.Expr{operand(rng)}}
	case k < 19:
		return column(rng) // a column as a condition: true only for a true bool
	}
	return &coproc.Expr{Op: "const", Value: constant(rng)}
}

func column(rng *rand.Rand) *coproc.Expr {
	cols := append([]string{coproc.KeyColumn, "zz", "a", "b"}, Columns...)
	return &coproc.Expr{Op: "col", Col: cols[rng.IntN(len(cols))]}
}

func operand(rng *rand.Rand) *coproc.Expr {
	switch k := rng.IntN(20); {
	case k < 12:
		return column(rng)
	case k < 19:
		return &coproc.Expr{Op: "const", Value: constant(rng)}
	}
	return filter(rng, 1) // a boolean, compared with bools
}

func constant(rng *rand.Rand) any {
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
	return scalar(rng)
}

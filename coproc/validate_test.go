package coproc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/scan"
)

// Expression shorthands for the tables below.
func vcol(name string) *Expr { return &Expr{Op: "col", Col: name} }
func vconst(v any) *Expr     { return &Expr{Op: "const", Value: v} }
func vop(op string, args ...*Expr) *Expr {
	return &Expr{Op: op, Args: args}
}

// all is the ranges of a request that scans everything.
var all = []KeyRange{{}}

func kr(start, end string) KeyRange {
	var r KeyRange
	if start != "" {
		r.Start = []byte(start)
	}
	if end != "" {
		r.End = []byte(end)
	}
	return r
}

// TestRequestValidate_Rules checks each rule alone: the request fails with
// ErrInvalidRequest (or ErrInvalidRange), and the message names the field.
func TestRequestValidate_Rules(t *testing.T) {
	manyRanges := make([]KeyRange, MaxRanges+1)
	for i := range manyRanges {
		k := fmt.Appendf(nil, "k%06d", i)
		manyRanges[i] = KeyRange{Start: k, End: k}
	}
	bigAnd := &Expr{Op: "and"} // MaxExprNodes+1 nodes
	for range MaxExprNodes {
		bigAnd.Args = append(bigAnd.Args, vconst(true))
	}
	hugeAnd := &Expr{Op: "and"} // far past the cap: still one problem
	for range 3 * MaxExprNodes {
		hugeAnd.Args = append(hugeAnd.Args, vop("not", vconst(true)))
	}
	cmpEq := vop("eq", vcol("a"), vconst(1))
	cases := []struct {
		name string
		req  Request
		is   error    // ErrInvalidRequest unless set
		want []string // the message contains each
	}{
		{name: "empty ranges", req: Request{}, want: []string{"Ranges is empty"}},
		{name: "nil ranges and filter", req: Request{Ranges: []KeyRange{}}, want: []string{"Ranges is empty"}},
		{name: "too many ranges", req: Request{Ranges: manyRanges}, want: []string{"Ranges has 1025 ranges", "1024"}},
		{name: "start after end", req: Request{Ranges: []KeyRange{kr("a", "b"), kr("d", "c")}}, is: ErrInvalidRange, want: []string{"Ranges[1]", `"d"`, `"c"`}},
		{name: "start after end first", req: Request{Ranges: []KeyRange{kr("b", "a")}}, is: ErrInvalidRange, want: []string{"Ranges[0]"}},
		{name: "overlapping", req: Request{Ranges: []KeyRange{kr("a", "c"), kr("b", "d")}}, want: []string{"Ranges[1] overlaps or comes before Ranges[0]"}},
		{name: "out of order", req: Request{Ranges: []KeyRange{kr("c", "d"), kr("a", "b")}}, want: []string{"Ranges[1]", "Ranges[0]"}},
		{name: "open end before another", req: Request{Ranges: []KeyRange{kr("a", ""), kr("b", "c")}}, want: []string{"Ranges[1]"}},
		{name: "open start after another", req: Request{Ranges: []KeyRange{kr("a", "b"), kr("", "c")}}, want: []string{"Ranges[1]"}},
		{name: "two whole ranges", req: Request{Ranges: []KeyRange{{}, {}}}, want: []string{"Ranges[1]"}},
		{name: "third overlaps second", req: Request{Ranges: []KeyRange{kr("a", "b"), kr("c", "e"), kr("d", "f")}}, want: []string{"Ranges[2] overlaps or comes before Ranges[1]"}},

		{name: "unknown op", req: Request{Ranges: all, Filter: &Expr{Op: "xor"}}, want: []string{`Filter: unknown Op "xor"`}},
		{name: "empty op", req: Request{Ranges: all, Filter: &Expr{}}, want: []string{`Filter: unknown Op ""`}},
		{name: "unknown op nested", req: Request{Ranges: all, Filter: vop("and", cmpEq, vop("not", &Expr{Op: "EQ"}))}, want: []string{`Filter.Args[1].Args[0]: unknown Op "EQ"`}},
		{name: "nil filter arg", req: Request{Ranges: all, Filter: vop("or", nil, cmpEq)}, want: []string{"Filter.Args[0] is nil"}},
		{name: "col without col", req: Request{Ranges: all, Filter: vop("isnull", &Expr{Op: "col"})}, want: []string{"Filter.Args[0]: col names no column"}},
		{name: "const list", req: Request{Ranges: all, Filter: vop("eq", vcol("a"), vconst([]any{1}))}, want: []string{"Filter.Args[1]: const Value of type []interface {}"}},
		{name: "const map", req: Request{Ranges: all, Filter: vop("eq", vcol("a"), vconst(map[string]any{"x": 1}))}, want: []string{"Filter.Args[1]: const Value of type map[string]interface {}"}},
		{name: "const struct", req: Request{Ranges: all, Filter: vop("eq", vcol("a"), vconst(struct{}{}))}, want: []string{"Filter.Args[1]: const Value of type struct {}"}},
		{name: "in without list", req: Request{Ranges: all, Filter: &Expr{Op: "in", Args: []*Expr{vcol("a")}}}, want: []string{"Filter: in needs a list ([]any) in Value, not <nil>"}},
		{name: "in with a scalar", req: Request{Ranges: all, Filter: &Expr{Op: "in", Value: 3, Args: []*Expr{vcol("a")}}}, want: []string{"Filter: in needs a list", "not int"}},
		{name: "in with a typed list", req: Request{Ranges: all, Filter: &Expr{Op: "in", Value: []int{3}, Args: []*Expr{vcol("a")}}}, want: []string{"Filter: in needs a list", "not []int"}},
		{name: "in with a non-scalar", req: Request{Ranges: all, Filter: &Expr{Op: "in", Value: []any{1, "x", []any{2}}, Args: []*Expr{vcol("a")}}}, want: []string{"Filter: in Value[2] of type []interface {}"}},
		{name: "too many nodes", req: Request{Ranges: all, Filter: bigAnd}, want: []string{"Filter has more than 1024 nodes"}},
		{name: "far too many nodes", req: Request{Ranges: all, Filter: vop("or", cmpEq, hugeAnd)}, want: []string{"Filter has more than 1024 nodes"}},

		{name: "unknown aggregate", req: Request{Ranges: all, Aggs: []Agg{{Func: "count"}, {Func: "median", Col: "a"}}}, want: []string{`Aggs[1]: unknown Func "median"`}},
		{name: "count upper case", req: Request{Ranges: all, Aggs: []Agg{{Func: "COUNT"}}}, want: []string{`Aggs[0]: unknown Func "COUNT"`}},
		{name: "duplicate count(*)", req: Request{Ranges: all, Aggs: []Agg{{Func: "count"}, {Func: "count"}}}, want: []string{`Aggs[1]: output column "count(*)" is already taken`}},
		{name: "duplicate default names", req: Request{Ranges: all, Aggs: []Agg{{Func: "sum", Col: "a"}, {Func: "min", Col: "a"}, {Func: "sum", Col: "a"}}}, want: []string{`Aggs[2]: output column "sum(a)" is already taken`}},
		{name: "as taken by an aggregate", req: Request{Ranges: all, Aggs: []Agg{{Func: "sum", Col: "a"}, {Func: "max", Col: "b", As: "sum(a)"}}}, want: []string{`Aggs[1]: output column "sum(a)" is already taken`}},
		{name: "as taken by a group", req: Request{Ranges: all, GroupBy: []string{"g"}, Aggs: []Agg{{Func: "count", As: "g"}}}, want: []string{`Aggs[0]: output column "g" is already taken`}},
		{name: "empty group column", req: Request{Ranges: all, GroupBy: []string{"g", ""}, Aggs: []Agg{{Func: "count"}}}, want: []string{"GroupBy names an empty column"}},
		{name: "columns with aggs", req: Request{Ranges: all, Columns: []string{"a"}, Aggs: []Agg{{Func: "count"}}}, want: []string{"Columns is set with Aggs or GroupBy"}},
		{name: "empty columns with group by", req: Request{Ranges: all, Columns: []string{}, GroupBy: []string{"g"}}, want: []string{"Columns is set with Aggs or GroupBy"}},

		{name: "order without limit", req: Request{Ranges: all, OrderBy: []Order{{Col: "a"}}}, want: []string{"OrderBy without Limit"}},
		{name: "order over max limit", req: Request{Ranges: all, OrderBy: []Order{{Col: "a"}}, Limit: MaxLimit + 1}, want: []string{"Limit 100001 with OrderBy is more than 100000"}},
		{name: "order by no column", req: Request{Ranges: all, OrderBy: []Order{{Col: "a"}, {}}, Limit: 1}, want: []string{"OrderBy[1] names no column"}},
		{name: "order by unknown with aggs", req: Request{Ranges: all, GroupBy: []string{"g"}, Aggs: []Agg{{Func: "count", As: "n"}}, OrderBy: []Order{{Col: "n"}, {Col: "count(*)"}}, Limit: 1}, want: []string{`OrderBy[1]: "count(*)" is not a group or aggregate column`}},
		{name: "order by input column with aggs", req: Request{Ranges: all, Aggs: []Agg{{Func: "sum", Col: "a"}}, OrderBy: []Order{{Col: "a"}}, Limit: 1}, want: []string{`OrderBy[0]: "a" is not a group or aggregate column`}},
		{name: "negative limit", req: Request{Ranges: all, Limit: -1}, want: []string{"Limit -1 is negative"}},
		{name: "negative paging size", req: Request{Ranges: all, PagingSize: -5}, want: []string{"PagingSize -5 is negative"}},
	}
	for _, f := range []string{"sum", "min", "max", "avg"} {
		cases = append(cases, struct {
			name string
			req  Request
			is   error
			want []string
		}{name: f + " without col", req: Request{Ranges: all, Aggs: []Agg{{Func: "count"}, {Func: f}}}, want: []string{fmt.Sprintf("Aggs[1]: %s needs a Col", f)}})
	}
	for _, c := range arityCases() {
		cases = append(cases, struct {
			name string
			req  Request
			is   error
			want []string
		}{name: "arity " + c.name, req: Request{Ranges: all, Filter: vop("not", c.expr)}, want: []string{"Filter.Args[0]: " + c.msg}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.req.validate()
			require.Error(t, err)
			is := c.is
			if is == nil {
				is = ErrInvalidRequest
			}
			assert.ErrorIs(t, err, is)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Equal(t, 1, len(unjoin(err)), "one problem, reported once")

			// NewTask validates the same way, and opens nothing on an error.
			open := func(scan.Spec) (*scan.Cursor, error) { t.Fatal("opened"); return nil, nil }
			task, err2 := NewTask(context.Background(), &c.req, open, func() { t.Fatal("released") })
			assert.Nil(t, task)
			assert.Equal(t, err.Error(), err2.Error())
		})
	}
}

type arityCase struct {
	name string
	expr *Expr
	msg  string
}

// arityCases is, for every op, a node with too few args and one with too
// many (where "too many" exists).
func arityCases() []arityCase {
	args := func(n int) []*Expr {
		out := make([]*Expr, n)
		for i := range out {
			out[i] = vcol("a")
		}
		return out
	}
	var cs []arityCase
	for _, op := range []string{"and", "or"} {
		for _, n := range []int{0, 1} {
			cs = append(cs, arityCase{fmt.Sprintf("%s/%d", op, n), &Expr{Op: op, Args: args(n)}, fmt.Sprintf("%s takes at least 2 args, not %d", op, n)})
		}
	}
	for op, want := range map[string]int{"not": 1, "isnull": 1, "in": 1, "eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2, "prefix": 2, "col": 0, "const": 0} {
		for _, n := range []int{want - 1, want + 1} {
			if n < 0 {
				continue
			}
			e := &Expr{Op: op, Args: args(n), Col: "a"}
			if op == "in" {
				e.Value = []any{1}
			}
			cs = append(cs, arityCase{fmt.Sprintf("%s/%d", op, n), e, fmt.Sprintf("%s takes %d args, not %d", op, want, n)})
		}
	}
	return cs
}

// unjoin flattens errors.Join trees into their leaves.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// TestRequestValidate_Several reports every problem of a request at once,
// each matching its sentinel and naming its field.
func TestRequestValidate_Several(t *testing.T) {
	req := &Request{
		Ranges:     []KeyRange{kr("b", "a"), kr("c", "d"), kr("c", "e")},
		Filter:     vop("and", vop("eq", vcol("a")), &Expr{Op: "bogus"}, vop("not", nil)),
		Columns:    []string{"x"},
		GroupBy:    []string{"g"},
		Aggs:       []Agg{{Func: "avg"}, {Func: "mode", Col: "x"}, {Func: "count", As: "g"}},
		OrderBy:    []Order{{Col: "zz"}},
		Limit:      -2, // also OrderBy's Limit: "without Limit" is not reported
		PagingSize: -3,
	}
	err := req.validate()
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalidRequest)
	assert.ErrorIs(t, err, ErrInvalidRange)
	want := []string{
		"Ranges[0]",
		"Ranges[2] overlaps or comes before Ranges[1]",
		"Filter.Args[0]: eq takes 2 args, not 1",
		`Filter.Args[1]: unknown Op "bogus"`,
		"Filter.Args[2].Args[0] is nil",
		"Columns is set with Aggs or GroupBy",
		"Aggs[0]: avg needs a Col",
		`Aggs[1]: unknown Func "mode"`,
		`Aggs[2]: output column "g" is already taken`,
		`OrderBy[0]: "zz" is not a group or aggregate column`,
		"Limit -2 is negative",
		"PagingSize -3 is negative",
	}
	leaves := unjoin(err)
	for _, w := range want {
		assert.Contains(t, err.Error(), w)
	}
	assert.Equal(t, len(want), len(leaves), "%v", err)
	for _, e := range leaves {
		assert.True(t, errors.Is(e, ErrInvalidRequest) || errors.Is(e, ErrInvalidRange), "%v", e)
	}
	// The range problem is a range error, not a request error, so callers
	// can map it to their ErrInvalidRange.
	for _, e := range leaves {
		if strings.Contains(e.Error(), "Ranges[0]") {
			assert.ErrorIs(t, e, ErrInvalidRange)
		}
	}
}

// TestRequestValidate_Valid accepts the edges of every rule.
func TestRequestValidate_Valid(t *testing.T) {
	for _, c := range []struct {
		name string
		req  Request
	}{
		{name: "every key", req: Request{Ranges: all}},
		{name: "empty range", req: Request{Ranges: []KeyRange{kr("a", "a")}}},
		{name: "adjacent ranges", req: Request{Ranges: []KeyRange{kr("", "b"), kr("b", "c"), kr("c", "")}}},
		{name: "empty ranges side by side", req: Request{Ranges: []KeyRange{kr("a", "a"), kr("a", "a")}}},
		{name: "max ranges", req: Request{Ranges: func() []KeyRange {
			rs := make([]KeyRange, MaxRanges)
			for i := range rs {
				rs[i] = KeyRange{Start: fmt.Appendf(nil, "k%06d", i), End: fmt.Appendf(nil, "k%06d", i+1)}
			}
			return rs
		}()}},
		{name: "every op", req: Request{Ranges: all, Filter: vop("and",
			vop("or", vop("eq", vcol("a"), vconst(1)), vop("ne", vcol("a"), vconst(uint64(1)<<63)), vop("lt", vcol("a"), vconst(1.5))),
			vop("not", vop("le", vcol("_key"), vconst([]byte("k")))),
			vop("gt", vcol("a"), vconst(nil)), vop("ge", vcol("a"), vconst(false)),
			&Expr{Op: "in", Value: []any{nil, 1, "x", []byte("y"), 2.5, true, uint8(3)}, Args: []*Expr{vcol("a")}},
			&Expr{Op: "in", Value: []any{}, Args: []*Expr{vcol("a")}},
			vop("prefix", vcol("s"), vconst("p")), vop("isnull", vcol("b")), vcol("f"), vconst(int32(1)),
		)}},
		{name: "max nodes", req: Request{Ranges: all, Filter: func() *Expr {
			e := &Expr{Op: "and"}
			for range MaxExprNodes - 1 {
				e.Args = append(e.Args, vconst(true))
			}
			return e
		}()}},
		{name: "every aggregate", req: Request{Ranges: all, GroupBy: []string{"g", "_key"}, Aggs: []Agg{{Func: "count"}, {Func: "count", Col: "a"}, {Func: "sum", Col: "a"}, {Func: "min", Col: "a"}, {Func: "max", Col: "a"}, {Func: "avg", Col: "a", As: "mean"}}}},
		{name: "group by alone", req: Request{Ranges: all, GroupBy: []string{"g"}}},
		{name: "top groups", req: Request{Ranges: all, GroupBy: []string{"g"}, Aggs: []Agg{{Func: "count", As: "n"}}, OrderBy: []Order{{Col: "n", Desc: true}, {Col: "g"}}, Limit: MaxLimit}},
		{name: "top rows by any column", req: Request{Ranges: all, Columns: []string{"a"}, OrderBy: []Order{{Col: "b"}}, Limit: 3}},
		{name: "large limit without order", req: Request{Ranges: all, Limit: MaxLimit * 10}},
		{name: "paging with aggregates", req: Request{Ranges: all, Aggs: []Agg{{Func: "count"}}, PagingSize: 10}},
		{name: "empty columns", req: Request{Ranges: all, Columns: []string{}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.NoError(t, c.req.validate())
		})
	}
}

// TestNewTask_NilRequest refuses a nil request.
func TestNewTask_NilRequest(t *testing.T) {
	task, err := NewTask(context.Background(), nil, nil, nil)
	assert.Nil(t, task)
	assert.ErrorIs(t, err, ErrInvalidRequest)
}

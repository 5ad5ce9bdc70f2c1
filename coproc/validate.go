package coproc

import (
	"bytes"
	"errors"
	"fmt"
)

// Limits of a request, so that its memory is bounded by design.
const (
	// MaxRanges is the most ranges a request may name.
	MaxRanges = 1024
	// MaxExprNodes is the most nodes a filter may have.
	MaxExprNodes = 1024
	// MaxGroups is the most distinct groups a hash aggregation keeps;
	// one more fails the request with ErrTooManyGroups, not an OOM.
	MaxGroups = 100_000
	// MaxLimit is the largest Limit a top-N request may ask for (top-N
	// holds Limit rows).
	MaxLimit = 100_000
	// MaxResponseRows is the most rows a response may hold; a request
	// without Limit or paging that would return more fails with
	// ErrResponseTooLarge (page it instead).
	MaxResponseRows = 1_000_000
)

// validate reports every problem of r at once, each naming its field.
func (r *Request) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidRequest}, args...)...))
	}
	if len(r.Ranges) == 0 {
		bad("Ranges is empty (one KeyRange{} scans every key)")
	}
	if len(r.Ranges) > MaxRanges {
		bad("Ranges has %d ranges, more than %d", len(r.Ranges), MaxRanges)
	}
	for i, kr := range r.Ranges {
		if kr.Start != nil && kr.End != nil && bytes.Compare(kr.Start, kr.End) > 0 {
			errs = append(errs, &RangeError{Index: i, Start: kr.Start, End: kr.End})
			continue
		}
		if i > 0 {
			prev := r.Ranges[i-1]
			if prev.End == nil || kr.Start == nil || bytes.Compare(prev.End, kr.Start) > 0 {
				bad("Ranges[%d] overlaps or comes before Ranges[%d]: ranges must be in ascending order and disjoint", i, i-1)
			}
		}
	}
	if r.Filter != nil {
		n := 0
		if err := r.Filter.validate("Filter", &n); err != nil {
			errs = append(errs, err)
		}
	}
	if r.Limit < 0 {
		bad("Limit %d is negative", r.Limit)
	}
	if r.PagingSize < 0 {
		bad("PagingSize %d is negative", r.PagingSize)
	}
	if len(r.OrderBy) > 0 && r.Limit == 0 {
		bad("OrderBy without Limit would sort without bound: give a Limit (top-N)")
	}
	if len(r.OrderBy) > 0 && r.Limit > MaxLimit {
		bad("Limit %d with OrderBy is more than %d (top-N holds Limit rows)", r.Limit, MaxLimit)
	}
	for i, o := range r.OrderBy {
		if o.Col == "" {
			bad("OrderBy[%d] names no column", i)
		}
	}
	if len(r.Aggs) > 0 || len(r.GroupBy) > 0 {
		if r.Columns != nil {
			bad("Columns is set with Aggs or GroupBy: an aggregate returns its group and aggregate columns")
		}
		names := map[string]bool{}
		for _, g := range r.GroupBy {
			if g == "" {
				bad("GroupBy names an empty column")
			}
			names[g] = true
		}
		for i, a := range r.Aggs {
			switch a.Func {
			case "count":
			case "sum", "min", "max", "avg":
				if a.Col == "" {
					bad("Aggs[%d]: %s needs a Col", i, a.Func)
				}
			default:
				bad("Aggs[%d]: unknown Func %q (want count, sum, min, max or avg)", i, a.Func)
			}
			if name := a.name(); names[name] {
				bad("Aggs[%d]: output column %q is already taken", i, name)
			} else {
				names[name] = true
			}
		}
		for i, o := range r.OrderBy {
			if o.Col != "" && !names[o.Col] {
				bad("OrderBy[%d]: %q is not a group or aggregate column", i, o.Col)
			}
		}
	}
	return errors.Join(errs...)
}

// name is the aggregate's output column.
func (a *Agg) name() string {
	if a.As != "" {
		return a.As
	}
	if a.Col == "" {
		return a.Func + "(*)"
	}
	return a.Func + "(" + a.Col + ")"
}

// arity is how many args each op takes: n exactly, or at least -n.
var arity = map[string]int{
	"and": -2, "or": -2, "not": 1,
	"eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2,
	"in": 1, "prefix": 2, "isnull": 1,
	"col": 0, "const": 0,
}

func (e *Expr) validate(path string, nodes *int) error {
	if e == nil {
		return fmt.Errorf("%w: %s is nil", ErrInvalidRequest, path)
	}
	if *nodes++; *nodes > MaxExprNodes {
		return fmt.Errorf("%w: Filter has more than %d nodes", ErrInvalidRequest, MaxExprNodes)
	}
	want, ok := arity[e.Op]
	if !ok {
		return fmt.Errorf("%w: %s: unknown Op %q", ErrInvalidRequest, path, e.Op)
	}
	switch n := len(e.Args); {
	case want >= 0 && n != want:
		return fmt.Errorf("%w: %s: %s takes %d args, not %d", ErrInvalidRequest, path, e.Op, want, n)
	case want < 0 && n < -want:
		return fmt.Errorf("%w: %s: %s takes at least %d args, not %d", ErrInvalidRequest, path, e.Op, -want, n)
	}
	switch e.Op {
	case "col":
		if e.Col == "" {
			return fmt.Errorf("%w: %s: col names no column", ErrInvalidRequest, path)
		}
	case "const":
		if !scalar(e.Value) {
			return fmt.Errorf("%w: %s: const Value of type %T (want nil, bool, a number, a string or bytes)", ErrInvalidRequest, path, e.Value)
		}
	case "in":
		list, ok := e.Value.([]any)
		if !ok {
			return fmt.Errorf("%w: %s: in needs a list ([]any) in Value, not %T", ErrInvalidRequest, path, e.Value)
		}
		for i, v := range list {
			if !scalar(v) {
				return fmt.Errorf("%w: %s: in Value[%d] of type %T (want nil, bool, a number, a string or bytes)", ErrInvalidRequest, path, i, v)
			}
		}
	}
	var errs []error
	for i, a := range e.Args {
		if err := a.validate(fmt.Sprintf("%s.Args[%d]", path, i), nodes); err != nil {
			errs = append(errs, err)
		}
		if *nodes > MaxExprNodes {
			break // reported once, where the cap was passed: not once per node past it
		}
	}
	return errors.Join(errs...)
}

// scalar reports whether v is a value a filter can compare.
func scalar(v any) bool {
	switch normalize(v).(type) {
	case nil, bool, int64, uint64, float64, string, []byte:
		return true
	}
	return false
}

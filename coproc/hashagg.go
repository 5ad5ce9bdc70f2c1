package coproc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
)

// hashAgg groups rows by their GroupBy values and folds the aggregates of
// each group, keeping at most MaxGroups groups.
type hashAgg struct {
	req    *Request
	group  []int // GroupBy's indexes
	aggCol []int // each Agg's column index; -2 for count(*)
	groups map[string]*groupState
	order  []*groupState // first-seen order, for a stable answer
	keyBuf []byte
}

type groupState struct {
	keys []any
	aggs []aggState
}

type aggState struct {
	count int64 // non-null inputs (count(*): rows)
	nums  int64 // numeric inputs, for sum and avg
	// sumHi:sumLo is the exact sum of the integer inputs, a 128-bit two's
	// complement number: it cannot overflow before 2^63 inputs, so whether
	// the sum fits int64 depends on the inputs, not on their order (an
	// int64 running sum would fail MaxInt64, 1, -2 and not -2, 1, MaxInt64).
	sumHi   int64
	sumLo   uint64
	sumF    float64 // the sum as a float: once a float comes, and for avg
	isFloat bool
	min     any
	max     any
}

func (s *aggState) addInt(x int64) {
	s.nums++
	s.sumF += float64(x)
	var carry uint64
	s.sumLo, carry = bits.Add64(s.sumLo, uint64(x), 0)
	s.sumHi += int64(carry)
	if x < 0 {
		s.sumHi-- // x's sign extension
	}
}

func (s *aggState) addUint(x uint64) {
	s.nums++
	s.sumF += float64(x)
	var carry uint64
	s.sumLo, carry = bits.Add64(s.sumLo, x, 0)
	s.sumHi += int64(carry)
}

// sumInt is the exact integer sum, and whether it fits int64.
func (s *aggState) sumInt() (int64, bool) {
	fits := (s.sumHi == 0 && s.sumLo <= math.MaxInt64) || (s.sumHi == -1 && s.sumLo > math.MaxInt64)
	return int64(s.sumLo), fits
}

func (s *aggState) addFloat(x float64) {
	s.nums++
	s.sumF += x
	s.isFloat = true
}

// value is the aggregate's answer.
func (s *aggState) value(fn string) (any, error) {
	switch fn {
	case "count":
		return s.count, nil
	case "sum":
		switch {
		case s.nums == 0:
			return nil, nil
		case s.isFloat:
			return s.sumF, nil
		}
		sum, ok := s.sumInt()
		if !ok {
			return nil, ErrOverflow
		}
		return sum, nil
	case "avg":
		if s.nums == 0 {
			return nil, nil
		}
		return s.sumF / float64(s.nums), nil
	case "min":
		return s.min, nil
	case "max":
		return s.max, nil
	}
	return nil, nil
}

// result is one row per group (one row in all without GroupBy, also over
// no rows: count 0, the others null), in the order groups were first seen.
func (a *hashAgg) result() ([]map[string]any, error) {
	if len(a.group) == 0 && len(a.order) == 0 {
		a.order = append(a.order, &groupState{aggs: make([]aggState, len(a.req.Aggs))})
	}
	rows := make([]map[string]any, 0, len(a.order))
	for _, g := range a.order {
		out := make(map[string]any, len(a.req.GroupBy)+len(a.req.Aggs))
		for i, name := range a.req.GroupBy {
			out[name] = g.keys[i]
		}
		for j, ag := range a.req.Aggs {
			v, err := g.aggs[j].value(ag.Func)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ag.name(), err)
			}
			out[ag.name()] = v
		}
		rows = append(rows, out)
	}
	return rows, nil
}

func newHashAgg(req *Request, cols *columnSet) *hashAgg {
	a := &hashAgg{req: req, groups: map[string]*groupState{}}
	for _, g := range req.GroupBy {
		a.group = append(a.group, cols.index(g))
	}
	for _, ag := range req.Aggs {
		if ag.Col == "" {
			a.aggCol = append(a.aggCol, -2)
		} else {
			a.aggCol = append(a.aggCol, cols.index(ag.Col))
		}
	}
	return a
}

func (r *row) get(i int) any {
	if i < 0 {
		return r.key
	}
	return r.vals[i]
}

func (a *hashAgg) add(r *row) error {
	a.keyBuf = a.keyBuf[:0]
	for _, i := range a.group {
		a.keyBuf = appendGroupKey(a.keyBuf, r.get(i))
	}
	g := a.groups[string(a.keyBuf)]
	if g == nil {
		if len(a.groups) >= MaxGroups {
			return fmt.Errorf("%w: more than %d groups", ErrTooManyGroups, MaxGroups)
		}
		g = &groupState{aggs: make([]aggState, len(a.req.Aggs))}
		for _, i := range a.group {
			v := r.get(i)
			if b, ok := v.([]byte); ok {
				v = bytes.Clone(b) // the key's bytes live in the scan's batch
			}
			g.keys = append(g.keys, v)
		}
		a.groups[string(a.keyBuf)] = g
		a.order = append(a.order, g)
	}
	for j, ag := range a.req.Aggs {
		if err := g.aggs[j].add(ag.Func, a.aggCol[j], r); err != nil {
			return fmt.Errorf("%s: %w", ag.name(), err)
		}
	}
	return nil
}

// appendGroupKey encodes v so that equal values (1 and 1.0 included) have
// equal encodings and different ones different encodings.
func appendGroupKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 0)
	case bool:
		if x {
			return append(b, 1, 1)
		}
		return append(b, 1, 0)
	case int64:
		return binary.BigEndian.AppendUint64(append(b, 2), uint64(x))
	case uint64:
		if x <= math.MaxInt64 {
			return binary.BigEndian.AppendUint64(append(b, 2), x)
		}
		return binary.BigEndian.AppendUint64(append(b, 3), x)
	case float64:
		if x == math.Trunc(x) && x >= math.MinInt64 && x < math.MaxInt64 {
			return binary.BigEndian.AppendUint64(append(b, 2), uint64(int64(x)))
		}
		if x == math.Trunc(x) && x >= 1<<63 && x < 1<<64 {
			return binary.BigEndian.AppendUint64(append(b, 3), uint64(x)) // as the uint64 it equals
		}
		if math.IsNaN(x) {
			x = math.NaN() // one group, whatever the payload bits
		}
		return binary.BigEndian.AppendUint64(append(b, 4), math.Float64bits(x))
	case string:
		return append(binary.AppendUvarint(append(b, 5), uint64(len(x))), x...)
	case []byte:
		return append(binary.AppendUvarint(append(b, 5), uint64(len(x))), x...)
	case []any:
		b = binary.AppendUvarint(append(b, 6), uint64(len(x)))
		for _, e := range x {
			b = appendGroupKey(b, e)
		}
		return b
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		b = binary.AppendUvarint(append(b, 7), uint64(len(keys)))
		for _, k := range keys {
			b = appendGroupKey(b, k)
			b = appendGroupKey(b, x[k])
		}
		return b
	}
	// normalize leaves no other kind; should one come, its type is part of
	// its key so that values of two types that print alike stay apart.
	s := fmt.Sprintf("%T:%#v", v, v)
	return append(binary.AppendUvarint(append(b, 8), uint64(len(s))), s...)
}

func (s *aggState) add(fn string, col int, r *row) error {
	if col == -2 { // count(*)
		s.count++
		return nil
	}
	v := r.get(col)
	if v == nil {
		return nil
	}
	s.count++
	switch fn {
	case "sum", "avg":
		switch x := v.(type) {
		case int64:
			s.addInt(x)
		case uint64:
			s.addUint(x)
		case float64:
			s.addFloat(x)
		default:
			return nil // not a number: skipped, as a null is
		}
	case "min":
		if s.min == nil || orderCompare(v, s.min) < 0 {
			s.min = clone(v)
		}
	case "max":
		if s.max == nil || orderCompare(v, s.max) > 0 {
			s.max = clone(v)
		}
	}
	return nil
}

func clone(v any) any {
	if b, ok := v.([]byte); ok {
		return bytes.Clone(b)
	}
	return v
}

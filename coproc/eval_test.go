package coproc

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCompare_IntegersAndFloatsExactly: numbers compare as numbers whatever
// their types — exactly, beyond 2^53 too, where a float64 cannot hold every
// integer and converting the integer would make neighbours equal.
func TestCompare_IntegersAndFloatsExactly(t *testing.T) {
	const two53 = 1 << 53
	for _, c := range []struct {
		a, b any
		want int
	}{
		{int64(two53 + 1), float64(two53), 1},
		{int64(two53), float64(two53), 0},
		{int64(-two53 - 1), float64(-two53), -1},
		{int64(math.MaxInt64), float64(1 << 63), -1},
		{int64(math.MinInt64), float64(-(1 << 63)), 0},
		{int64(math.MinInt64), math.Inf(-1), 1},
		{int64(2), 2.5, -1},
		{int64(3), 2.5, 1},
		{int64(-2), -2.5, 1},
		{int64(-3), -2.5, -1},
		{uint64(math.MaxUint64), float64(1 << 64), -1},
		{uint64(1 << 63), float64(1 << 63), 0},
		{uint64(two53 + 1), float64(two53), 1},
		{uint64(0), -0.5, 1},
		{uint64(0), math.Inf(1), -1},
	} {
		got, ok := compare(c.a, c.b)
		assert.True(t, ok, "%v vs %v", c.a, c.b)
		assert.Equal(t, c.want, got, "%T %v vs %v", c.a, c.a, c.b)
		back, ok := compare(c.b, c.a)
		assert.True(t, ok)
		assert.Equal(t, -c.want, back, "%v vs %T %v", c.b, c.a, c.a)
	}
	for _, v := range []any{int64(1), uint64(1)} {
		_, ok := compare(v, math.NaN())
		assert.False(t, ok, "NaN is not comparable")
		_, ok = compare(math.NaN(), v)
		assert.False(t, ok)
	}
}

// TestGroupKey_EqualValuesOnlyShareAKey: group-by keys are equal exactly
// when the values are — lists and maps by their elements and types, not by
// how they print, and every NaN alike.
func TestGroupKey_EqualValuesOnlyShareAKey(t *testing.T) {
	key := func(v any) string { return string(appendGroupKey(nil, v)) }
	for _, pair := range [][2]any{
		{[]any{"a b"}, []any{"a", "b"}},
		{[]any{"1"}, []any{int64(1)}},
		{[]any{int64(1), []any{int64(2)}}, []any{[]any{int64(1)}, int64(2)}},
		{map[string]any{"a": "b c"}, map[string]any{"a b": "c"}},
		{"", nil},
		{int64(1 << 53), int64(1<<53 + 1)},
	} {
		assert.NotEqual(t, key(pair[0]), key(pair[1]), "%#v and %#v", pair[0], pair[1])
	}
	for _, pair := range [][2]any{
		{int64(1), 1.0},
		{uint64(7), int64(7)},
		{[]any{int64(1), "x"}, []any{1.0, []byte("x")}},
		{map[string]any{"a": int64(1), "b": nil}, map[string]any{"b": nil, "a": 1.0}},
		{math.NaN(), math.Float64frombits(math.Float64bits(math.NaN()) | 1)},
	} {
		assert.Equal(t, key(pair[0]), key(pair[1]), "%#v and %#v", pair[0], pair[1])
	}
}

package coproctest

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// approx is an expected float known up to a tolerance (a float sum or an
// average, whose rounding depends on the order of the additions).
type approx struct{ v, tol float64 }

func approxValue(v any) any {
	if a, ok := v.(approx); ok {
		return a.v
	}
	return v
}

// normalize maps the Go types the generator uses for constants to the
// types rows decode to.
func normalize(v any) any {
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
	switch x := normalize(v).(type) {
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

// compare orders two values of comparable kinds: numbers exactly by
// value whatever their types, strings and bytes bytewise, bools false
// first. ok is false for null or different kinds.
func compare(a, b any) (int, bool) {
	a, b = normalize(a), normalize(b)
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

// order is the sort order: null, bools, numbers, strings and bytes.
func order(a, b any) int {
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
	c, _ := compare(a, b)
	return c
}

// canonical is a value's identity for grouping: numbers by exact value (1
// and 1.0 are one group), strings and bytes by their bytes.
func canonical(v any) string {
	switch x := normalize(v).(type) {
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

// groupKey is the identity of the group of a row whose columns get gives.
func groupKey(cols []string, get func(string) any) string {
	var b strings.Builder
	for _, c := range cols {
		s := canonical(get(c))
		fmt.Fprintf(&b, "%d:%s", len(s), s)
	}
	return b.String()
}

// RowEqual compares a reference row (Answer.Rows) with a returned one:
// the same columns, each value equal by ValueEqual.
func RowEqual(want, got map[string]any) bool {
	if len(want) != len(got) {
		return false
	}
	for c, w := range want {
		g, ok := got[c]
		if !ok || !ValueEqual(w, g) {
			return false
		}
	}
	return true
}

// ValueEqual compares a reference value with a returned one: numbers by
// value whatever their types (a float sum or average within its
// tolerance), strings with strings and bytes with bytes by their bytes,
// bools, nulls.
func ValueEqual(want, got any) bool {
	if a, ok := want.(approx); ok {
		f, _, ok := numberOf(got)
		return ok && math.Abs(f-a.v) <= a.tol
	}
	want, got = normalize(want), normalize(got)
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

package coproc

import (
	"math"
	"reflect"
)

// normalize returns v as one of: nil, bool, int64, uint64 (only above
// MaxInt64), float64, string, []byte, []any, map[string]any. Numbers
// convert loosely: every signed and unsigned width becomes int64 (or
// uint64 when it does not fit), float32 becomes float64; named types
// become their underlying kind; other slices and arrays become []any (byte
// slices and arrays []byte), maps with string keys map[string]any, and a
// pointer its target. Nil slices, maps and pointers become nil, as msgpack
// encodes them. Anything else (a struct, time.Time, a channel) comes back
// unchanged, for the caller to refuse.
//
// normalize never modifies v: a []any or map[string]any that holds only
// normal values is returned as is, and one that does not is copied.
func normalize(v any) any {
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return v
	case []byte:
		if x == nil {
			return nil
		}
		return v
	case uint64:
		return normUint(x)
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint:
		return normUint(uint64(x))
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case float32:
		return float64(x)
	case []any:
		if x == nil {
			return nil
		}
		if isNormal(v) {
			return v
		}
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normalize(e)
		}
		return s
	case map[string]any:
		if x == nil {
			return nil
		}
		if isNormal(v) {
			return v
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	}
	return normalizeReflect(reflect.ValueOf(v), v)
}

// normalizeReflect handles what normalize's type switch does not: named
// types and other slices, arrays, maps and pointers. orig is returned for
// kinds it leaves alone.
func normalizeReflect(rv reflect.Value, orig any) any {
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return normUint(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.String:
		return rv.String()
	case reflect.Slice:
		if rv.IsNil() {
			return nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return rv.Bytes()
		}
		return normalizeList(rv)
	case reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(b), rv)
			return b
		}
		return normalizeList(rv)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return orig
		}
		if rv.IsNil() {
			return nil
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = normalize(it.Value().Interface())
		}
		return m
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return normalize(rv.Elem().Interface())
	}
	return orig
}

func normalizeList(rv reflect.Value) []any {
	s := make([]any, rv.Len())
	for i := range s {
		s[i] = normalize(rv.Index(i).Interface())
	}
	return s
}

// normUint returns u as int64 when it fits, so that an unsigned number and
// a signed one of the same value compare equal without the caller caring
// how msgpack chose to write it (a compact encoder writes 200 as uint8).
func normUint(u uint64) any {
	if u > math.MaxInt64 {
		return u
	}
	return int64(u)
}

// isNormal reports whether v is already what normalize would return.
func isNormal(v any) bool {
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return true
	case []byte:
		return x != nil
	case uint64:
		return x > math.MaxInt64
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isNormal(e) {
				return false
			}
		}
		return true
	case map[string]any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isNormal(e) {
				return false
			}
		}
		return true
	}
	return false
}

// normalizeOwned is normalize for values the codec has just built and
// nobody else holds: it converts []any and map[string]any in place
// instead of copying them.
func normalizeOwned(v any) any {
	switch x := v.(type) {
	case []any:
		if x == nil {
			return nil
		}
		for i, e := range x {
			x[i] = normalizeOwned(e)
		}
		return x
	case map[string]any:
		if x == nil {
			return nil
		}
		for k, e := range x {
			x[k] = normalizeOwned(e)
		}
		return x
	}
	return normalize(v)
}

// canonExpr normalizes a decoded filter in place: loose numbers in values,
// and nil for empty args, which omitempty could not have written.
func canonExpr(e *Expr) {
	if e == nil {
		return
	}
	e.Value = normalizeOwned(e.Value)
	e.Args = nilIfEmpty(e.Args)
	for _, a := range e.Args {
		canonExpr(a)
	}
}

func nilIfEmpty[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

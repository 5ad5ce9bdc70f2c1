package coproc

import (
	"bytes"
	"cmp"
	"math"
)

// Values in a filter are nil, bool, int64, uint64, float64, string and
// []byte (normalize makes them so). Numbers compare as numbers whatever
// their types; strings and bytes compare bytewise with each other; bools
// with bools. Anything compared with null, or with a value of another kind,
// is false — not an error — and "not" of false is true (two-valued logic).

// compare orders a and b, and reports false when they are not comparable.
func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp.Compare(x, y), true
		case uint64:
			if x < 0 {
				return -1, true
			}
			return cmp.Compare(uint64(x), y), true
		case float64:
			return cmpIntFloat(x, y)
		}
	case uint64:
		switch y := b.(type) {
		case uint64:
			return cmp.Compare(x, y), true
		case int64:
			if y < 0 {
				return 1, true
			}
			return cmp.Compare(x, uint64(y)), true
		case float64:
			return cmpUintFloat(x, y)
		}
	case float64:
		switch y := b.(type) {
		case float64:
			return cmpFloat(x, y)
		case int64:
			n, ok := cmpIntFloat(y, x)
			return -n, ok
		case uint64:
			n, ok := cmpUintFloat(y, x)
			return -n, ok
		}
	case string:
		switch y := b.(type) {
		case string:
			return cmp.Compare(x, y), true
		case []byte:
			return bytes.Compare([]byte(x), y), true
		}
	case []byte:
		switch y := b.(type) {
		case []byte:
			return bytes.Compare(x, y), true
		case string:
			return bytes.Compare(x, []byte(y)), true
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0, true
			case !x:
				return -1, true
			}
			return 1, true
		}
	}
	return 0, false
}

func cmpFloat(x, y float64) (int, bool) {
	if math.IsNaN(x) || math.IsNaN(y) {
		return 0, false
	}
	return cmp.Compare(x, y), true
}

// cmpIntFloat compares exactly: an int64 beyond 2^53 need not be a float64,
// and converting it would make 2^53+1 equal 2^53.
func cmpIntFloat(i int64, f float64) (int, bool) {
	switch {
	case math.IsNaN(f):
		return 0, false
	case f >= 1<<63:
		return -1, true
	case f < -(1 << 63):
		return 1, true
	}
	t := math.Trunc(f) // within int64's range now, and exact
	if n := cmp.Compare(i, int64(t)); n != 0 {
		return n, true
	}
	return cmp.Compare(t, f), true // i == t: the fraction decides
}

// cmpUintFloat is cmpIntFloat for a uint64.
func cmpUintFloat(u uint64, f float64) (int, bool) {
	switch {
	case math.IsNaN(f):
		return 0, false
	case f < 0:
		return 1, true
	case f >= 1<<64:
		return -1, true
	}
	t := math.Trunc(f)
	if n := cmp.Compare(u, uint64(t)); n != 0 {
		return n, true
	}
	return cmp.Compare(t, f), true
}

// row is what an expression sees of one row: its key and the values of the
// columns the request reads, by index.
type row struct {
	key  []byte
	vals []any
}

// compiled is an expression bound to column indexes.
type compiled struct {
	op   string
	col  int // for "col": an index in row.vals, or -1 for the key
	val  any // for "const", normalised; for "in", the list
	args []*compiled
}

// compile binds e's column names to indexes in cols, adding the names it
// meets.
func compile(e *Expr, cols *columnSet) *compiled {
	c := &compiled{op: e.Op}
	switch e.Op {
	case "col":
		c.col = cols.index(e.Col)
	case "const":
		c.val = normalize(e.Value)
	case "in":
		list := e.Value.([]any)
		norm := make([]any, len(list))
		for i, v := range list {
			norm[i] = normalize(v)
		}
		c.val = norm
	}
	for _, a := range e.Args {
		c.args = append(c.args, compile(a, cols))
	}
	return c
}

// eval returns the expression's value on r.
func (c *compiled) eval(r *row) any {
	switch c.op {
	case "col":
		if c.col < 0 {
			return r.key
		}
		return r.vals[c.col]
	case "const":
		return c.val
	case "and":
		for _, a := range c.args {
			if !truth(a.eval(r)) {
				return false
			}
		}
		return true
	case "or":
		for _, a := range c.args {
			if truth(a.eval(r)) {
				return true
			}
		}
		return false
	case "not":
		return !truth(c.args[0].eval(r))
	case "isnull":
		return c.args[0].eval(r) == nil
	case "in":
		v := c.args[0].eval(r)
		for _, x := range c.val.([]any) {
			if n, ok := compare(v, x); ok && n == 0 {
				return true
			}
		}
		return false
	case "prefix":
		s, ok1 := asBytes(c.args[0].eval(r))
		p, ok2 := asBytes(c.args[1].eval(r))
		return ok1 && ok2 && bytes.HasPrefix(s, p)
	}
	n, ok := compare(c.args[0].eval(r), c.args[1].eval(r))
	if !ok {
		return false // null, or incomparable kinds
	}
	switch c.op {
	case "eq":
		return n == 0
	case "ne":
		return n != 0
	case "lt":
		return n < 0
	case "le":
		return n <= 0
	case "gt":
		return n > 0
	case "ge":
		return n >= 0
	}
	return false
}

func truth(v any) bool { b, ok := v.(bool); return ok && b }

func asBytes(v any) ([]byte, bool) {
	switch x := v.(type) {
	case []byte:
		return x, true
	case string:
		return []byte(x), true
	}
	return nil, false
}

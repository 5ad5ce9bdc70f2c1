package coproctest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/coopkv/coopkv/coproc"
)

// RowString prints a row with its columns sorted and its values typed:
// b"…" for bytes, "…" for a string, ~x for a reference float known within
// a tolerance, int64(5) for other values.
func RowString(m map[string]any) string {
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

// Describe prints r on one line, its filter as an expression, for a
// failure's message.
func Describe(r *coproc.Request) string {
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

package admin

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A small PromQL lexer for the board's queries. The module does not depend
// on Prometheus's own parser (it is large), and a board needs only the
// metric names, their label matchers and the functions around them.

// selector is a metric a query selects: its name, the label matchers in its
// braces, and the functions and aggregations it is inside, outermost first.
type selector struct {
	name     string
	matchers []matcher
	within   []string
}

type matcher struct{ label, op, value string }

// innermost is the function or aggregation whose argument the selector is
// ("" at the top).
func (s selector) innermost() string {
	for _, f := range slices.Backward(s.within) {
		if f != "" {
			return f
		}
	}
	return ""
}

// selectors reads the metric selectors of a PromQL query. It knows the
// grammar a board uses: calls of functions and aggregations (with by or
// without), binary operators with on, ignoring and group_left or
// group_right, label matchers, ranges and subqueries, offset and @,
// numbers, durations, strings, and Grafana's $variables. Anything else is
// an error, so that a query it cannot read fails rather than passing
// unchecked.
func selectors(query string) ([]selector, error) {
	l := &lexer{src: query}
	if err := l.run(); err != nil {
		return nil, fmt.Errorf("%w in %q", err, query)
	}
	return l.sels, nil
}

type lexer struct {
	src   string
	pos   int
	calls []string // the open parentheses: a call's name, "" for grouping
	next  string   // the function or aggregation whose '(' must come next
	sels  []selector
}

// The keywords that take a list of labels in parentheses.
var labelListKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

var keywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true}

var aggregations = setOf("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
	"bottomk", "topk", "quantile", "limitk", "limit_ratio")

var functions = setOf("abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
	"avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time",
	"day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv", "end",
	"double_exponential_smoothing", "exp", "floor", "histogram_avg", "histogram_count", "histogram_fraction",
	"histogram_quantile", "histogram_stddev", "histogram_stdvar", "histogram_sum", "holt_winters", "hour",
	"idelta", "increase", "irate", "label_join", "label_replace", "last_over_time", "ln", "log10", "log2",
	"mad_over_time", "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
	"present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn", "sin", "sinh",
	"sort", "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt", "start", "stddev_over_time",
	"stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func (l *lexer) run() error {
	for l.space(); l.pos < len(l.src); l.space() {
		c := l.src[l.pos]
		if l.next != "" && c != '(' && !l.atGrouping() {
			return fmt.Errorf("%s without its arguments at %d", l.next, l.pos)
		}
		switch {
		case isIdentStart(c):
			if err := l.ident(); err != nil {
				return err
			}
		case isDigit(c) || c == '.':
			l.number()
		case c == '"' || c == '\'' || c == '`':
			if _, err := l.str(); err != nil {
				return err
			}
		case c == '$':
			l.variable()
		case c == '(':
			l.calls = append(l.calls, l.next)
			l.next = ""
			l.pos++
		case c == ')':
			if len(l.calls) == 0 {
				return fmt.Errorf("unbalanced ) at %d", l.pos)
			}
			l.calls = l.calls[:len(l.calls)-1]
			l.pos++
		case c == '[':
			if err := l.skipPast(']'); err != nil {
				return err
			}
		case c == '{':
			// {__name__="x"} would hide the name from the checks.
			return fmt.Errorf("a selector without a metric name at %d", l.pos)
		case strings.IndexByte("+-*/%^=!<>,@", c) >= 0:
			l.pos++
		default:
			return fmt.Errorf("unexpected %q at %d", c, l.pos)
		}
	}
	switch {
	case len(l.calls) > 0:
		return fmt.Errorf("%d unclosed (", len(l.calls))
	case l.next != "":
		return fmt.Errorf("%s without its arguments", l.next)
	}
	return nil
}

// ident reads a name: a keyword, a call's or a metric's.
func (l *lexer) ident() error {
	start := l.pos
	for l.pos < len(l.src) && isIdent(l.src[l.pos]) {
		l.pos++
	}
	name := l.src[start:l.pos]
	switch lower := strings.ToLower(name); {
	case labelListKeywords[lower]:
		if l.space(); l.peek() == '(' {
			return l.skipPast(')')
		}
		return nil
	case keywords[lower]:
		return nil
	case aggregations[lower]:
		l.next = lower
		return nil
	}
	if l.space(); l.peek() == '(' {
		if !functions[name] {
			return fmt.Errorf("unknown function %s", name)
		}
		l.next = name
		return nil
	}
	sel := selector{name: name, within: slices.Clone(l.calls)}
	if l.peek() == '{' {
		var err error
		if sel.matchers, err = l.matchers(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	l.sels = append(l.sels, sel)
	return nil
}

// matchers reads {label op "value", ...}.
func (l *lexer) matchers() ([]matcher, error) {
	l.pos++ // {
	var ms []matcher
	for {
		if l.space(); l.peek() == '}' {
			l.pos++
			return ms, nil
		}
		start := l.pos
		for l.pos < len(l.src) && isIdent(l.src[l.pos]) {
			l.pos++
		}
		m := matcher{label: l.src[start:l.pos]}
		if m.label == "" {
			return nil, fmt.Errorf("want a label name at %d", l.pos)
		}
		l.space()
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(l.src[l.pos:], op) {
				m.op = op
				l.pos += len(op)
				break
			}
		}
		if m.op == "" {
			return nil, fmt.Errorf("want a matcher's operator at %d", l.pos)
		}
		l.space()
		v, err := l.str()
		if err != nil {
			return nil, err
		}
		m.value = v
		ms = append(ms, m)
		if l.space(); l.peek() == ',' {
			l.pos++
		}
	}
}

// str reads a quoted string and returns its contents, escapes as written.
func (l *lexer) str() (string, error) {
	q := l.peek()
	if q != '"' && q != '\'' && q != '`' {
		return "", fmt.Errorf("want a string at %d", l.pos)
	}
	start := l.pos
	for l.pos++; l.pos < len(l.src); l.pos++ {
		switch l.src[l.pos] {
		case '\\':
			if q != '`' {
				l.pos++
			}
		case q:
			l.pos++
			return l.src[start+1 : l.pos-1], nil
		}
	}
	return "", fmt.Errorf("unterminated string at %d", start)
}

// number reads a number or a duration: 0.99, 1e-3, 5m, 1h30m.
func (l *lexer) number() {
	for l.pos < len(l.src) && (isDigit(l.src[l.pos]) || l.src[l.pos] == '.') {
		l.pos++
	}
	if rest := l.src[l.pos:]; len(rest) > 1 && (rest[0] == 'e' || rest[0] == 'E') &&
		(isDigit(rest[1]) || (rest[1] == '-' || rest[1] == '+') && len(rest) > 2 && isDigit(rest[2])) {
		l.pos += 2
	}
	for l.pos < len(l.src) && (isDigit(l.src[l.pos]) || isLetter(l.src[l.pos])) {
		l.pos++
	}
}

// variable skips a Grafana variable: $name or ${name}.
func (l *lexer) variable() {
	l.pos++
	if l.peek() == '{' {
		_ = l.skipPast('}')
		return
	}
	for l.pos < len(l.src) && isIdent(l.src[l.pos]) {
		l.pos++
	}
}

// skipPast skips to just after the next c: the end of a range, or of a
// list of labels.
func (l *lexer) skipPast(c byte) error {
	i := strings.IndexByte(l.src[l.pos:], c)
	if i < 0 {
		return fmt.Errorf("no %q after %d", c, l.pos)
	}
	l.pos += i + 1
	return nil
}

// atGrouping says whether by or without (which may stand between an
// aggregation and its '(') comes next.
func (l *lexer) atGrouping() bool {
	end := l.pos
	for end < len(l.src) && isIdent(l.src[end]) {
		end++
	}
	w := strings.ToLower(l.src[l.pos:end])
	return w == "by" || w == "without"
}

func (l *lexer) space() {
	for l.pos < len(l.src) && strings.IndexByte(" \t\r\n", l.src[l.pos]) >= 0 {
		l.pos++
	}
}

func (l *lexer) peek() byte {
	if l.pos < len(l.src) {
		return l.src[l.pos]
	}
	return 0
}

func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isLetter(c byte) bool     { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentStart(c byte) bool { return isLetter(c) || c == '_' || c == ':' }
func isIdent(c byte) bool      { return isIdentStart(c) || isDigit(c) }

func TestSelectors(t *testing.T) {
	type sel struct {
		name     string
		within   string
		matchers string
	}
	for _, tc := range []struct {
		query string
		want  []sel
		err   string
	}{
		{query: `histogram_quantile(0.99, sum by (instance, le) (rate(coopkv_w_bucket{instance=~"$instance"}[$__rate_interval])))`,
			want: []sel{{"coopkv_w_bucket", "histogram_quantile sum rate", `instance=~$instance`}}},
		{query: `sum(rate(a[5m])) / (sum(rate(a[5m])) + sum without(x) (rate(b_total{k="v", j!~"x|y"}[1h30m])))`,
			want: []sel{{"a", "sum rate", ""}, {"a", " sum rate", ""}, {"b_total", " sum rate", `k=v j!~x|y`}}},
		{query: `max by (group) (g{group=~"$group"} > 0)`, want: []sel{{"g", "max", `group=~$group`}}},
		{query: `a offset 5m * on(instance) group_left(x) b > bool 1e-3 unless c @ end()`,
			want: []sel{{"a", "", ""}, {"b", "", ""}, {"c", "", ""}}},
		{query: `SUM BY (le) (x[5m:1m]) and Inf`, want: []sel{{"x", "sum", ""}}},
		{query: `x{a="}", b='q\'s'}`, want: []sel{{"x", "", `a=} b=q\'s`}}},
		{query: `{__name__="x"}`, err: "a selector without a metric name"},
		{query: `rat(x[5m])`, err: "unknown function rat"},
		{query: `sum(rate(x[5m])`, err: "1 unclosed ("},
		{query: `sum(x))`, err: "unbalanced )"},
		{query: `sum x`, err: "sum without its arguments"},
		{query: `x{a=1}`, err: "want a string"},
		{query: `x{a="v}`, err: "unterminated string"},
		{query: `x # y`, err: `unexpected '#'`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			got, err := selectors(tc.query)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			var have []sel
			for _, s := range got {
				var ms []string
				for _, m := range s.matchers {
					ms = append(ms, m.label+m.op+m.value)
				}
				have = append(have, sel{s.name, strings.Join(s.within, " "), strings.Join(ms, " ")})
			}
			assert.Equal(t, tc.want, have)
		})
	}
}

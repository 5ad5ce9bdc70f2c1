package coproc

import (
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"

	"github.com/coopkv/coopkv/scan"
)

// KeyColumn is the column that holds a row's key.
const KeyColumn = "_key"

// columnSet names the columns a request reads, each with an index into a
// row's values; the key is index -1.
type columnSet struct {
	names []string
	idx   map[string]int
}

func (s *columnSet) index(name string) int {
	if name == KeyColumn {
		return -1
	}
	if i, ok := s.idx[name]; ok {
		return i
	}
	if s.idx == nil {
		s.idx = map[string]int{}
	}
	s.idx[name] = len(s.names)
	s.names = append(s.names, name)
	return len(s.names) - 1
}

// executor is a request's pipeline over batches of rows: decode (only the
// columns it reads) → selection → projection | hash aggregation | top-N →
// limit. It works a batch at a time; the task asks whether to yield before
// each batch.
type executor struct {
	req    *Request
	cols   columnSet
	dec    *columnDecoder // nil when the rows are returned whole
	filter *compiled
	proj   []int // Columns' indexes (-1: the key); nil: every column
	order  []int // OrderBy's indexes (-1: the key), for top-N over rows
	r      row   // scratch: the current row

	rows  []map[string]any
	top   *topN
	aggs  *hashAgg
	limit int // rows wanted without an order; 0 = all

	scanned, returned int64
	bytes             int64
	respBytes         int64
	done              bool // the limit is reached: scan no more
	lastKey           []byte
	trackKey          bool // keep lastKey: the request pages
}

func newExecutor(req *Request) *executor {
	x := &executor{req: req}
	if req.Filter != nil {
		x.filter = compile(req.Filter, &x.cols)
	}
	switch {
	case len(req.Aggs) > 0 || len(req.GroupBy) > 0:
		x.aggs = newHashAgg(req, &x.cols)
	case req.Columns != nil:
		for _, c := range req.Columns {
			x.proj = append(x.proj, x.cols.index(c))
		}
	}
	if x.aggs == nil && len(req.OrderBy) > 0 {
		x.top = newTopN(req.OrderBy, req.Limit)
		// Top-N orders by the rows' own values, which a projection may
		// leave out: the order columns are read whatever Columns says.
		for _, o := range req.OrderBy {
			x.order = append(x.order, x.cols.index(o.Col))
		}
	} else if x.aggs == nil {
		x.limit = req.Limit
	}
	// Whole rows are decoded only for a projection of every column; any
	// other request decodes just the columns it names.
	if x.aggs != nil || x.proj != nil {
		x.dec = newColumnDecoder(x.cols.names)
	}
	x.r.vals = make([]any, len(x.cols.names))
	return x
}

// feed runs one batch through the pipeline.
func (x *executor) feed(b *scan.Batch) error {
	for i := range b.Len() {
		key, val := b.Key(i), b.Value(i)
		x.scanned++
		x.bytes += int64(len(key) + len(val))
		if x.trackKey {
			x.lastKey = append(x.lastKey[:0], key...)
		}
		if err := x.row(key, val); err != nil {
			return err
		}
		if x.done {
			return nil
		}
	}
	return nil
}

func (x *executor) row(key, val []byte) error {
	var whole map[string]any
	if x.dec != nil {
		if err := x.dec.decode(val, x.r.vals); err != nil {
			return fmt.Errorf("%w: key %q: %w", ErrBadRow, key, err)
		}
	} else {
		m, err := DecodeRow(val)
		if err != nil {
			return fmt.Errorf("%w: key %q: %w", ErrBadRow, key, err)
		}
		whole = m
		for i, name := range x.cols.names {
			x.r.vals[i] = m[name]
		}
	}
	x.r.key = key
	if x.filter != nil && !truth(x.filter.eval(&x.r)) {
		return nil
	}
	if x.aggs != nil {
		return x.aggs.add(&x.r)
	}
	out := x.project(key, whole)
	if x.top != nil {
		keys := make([]any, len(x.order))
		for i, j := range x.order {
			keys[i] = clone(x.r.get(j)) // the key's bytes live in the scan's batch
		}
		x.top.add(out, keys, x.scanned)
		return nil
	}
	return x.emit(out)
}

// project builds the output row: the named columns, or every column and
// the key.
func (x *executor) project(key []byte, whole map[string]any) map[string]any {
	if x.proj == nil {
		whole[KeyColumn] = bytes.Clone(key)
		return whole
	}
	out := make(map[string]any, len(x.proj))
	for i, c := range x.req.Columns {
		if j := x.proj[i]; j < 0 {
			out[c] = bytes.Clone(key)
		} else {
			out[c] = x.r.vals[j]
		}
	}
	return out
}

// emit adds a row to the response, within its limits.
func (x *executor) emit(out map[string]any) error {
	x.respBytes += rowSize(out)
	if len(x.rows) >= MaxResponseRows || x.respBytes > MaxResponseBytes {
		return fmt.Errorf("%w: more than %d rows or %d bytes: page the request (PagingSize) or give a Limit", ErrResponseTooLarge, MaxResponseRows, MaxResponseBytes)
	}
	x.rows = append(x.rows, out)
	if x.limit > 0 && len(x.rows) >= x.limit {
		x.done = true
	}
	return nil
}

// result is the response's rows, once every batch has been fed.
func (x *executor) result() ([]map[string]any, error) {
	var rows []map[string]any
	switch {
	case x.aggs != nil:
		var err error
		if rows, err = x.aggs.result(); err != nil {
			return nil, err
		}
		if len(x.req.OrderBy) > 0 {
			t := newTopN(x.req.OrderBy, x.req.Limit)
			for i, r := range rows {
				keys := make([]any, len(x.req.OrderBy))
				for j, o := range x.req.OrderBy {
					keys[j] = r[o.Col]
				}
				t.add(r, keys, int64(i))
			}
			rows = t.result()
		} else if x.req.Limit > 0 && len(rows) > x.req.Limit {
			rows = rows[:x.req.Limit]
		}
	case x.top != nil:
		rows = x.top.result()
	default:
		rows = x.rows
	}
	if rows == nil {
		rows = []map[string]any{}
	}
	x.returned = int64(len(rows))
	return rows, nil
}

// rowSize estimates a row's encoded size, for the response cap.
func rowSize(r map[string]any) int64 {
	n := int64(8)
	for k, v := range r {
		n += int64(len(k)) + 2 + valueSize(v)
	}
	return n
}

func valueSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x)) + 5
	case []byte:
		return int64(len(x)) + 5
	case []any:
		n := int64(5)
		for _, e := range x {
			n += valueSize(e)
		}
		return n
	case map[string]any:
		return rowSize(x)
	}
	return 9
}

// orderCompare is a total order for sorting: null first, then bools,
// numbers, strings and bytes (compared together), and anything else; within
// a kind, compare's order.
func orderCompare(a, b any) int {
	ra, rb := kindRank(a), kindRank(b)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	if n, ok := compare(a, b); ok {
		return n
	}
	return 0
}

func kindRank(v any) int {
	switch x := v.(type) {
	case nil:
		return 0
	case bool:
		return 1
	case int64, uint64:
		return 2
	case float64:
		if math.IsNaN(x) {
			return 3 // NaN after every number
		}
		return 2
	case string, []byte:
		return 4
	}
	return 5
}

// topN keeps the first n rows by an order, ties in scan order, in a heap
// of n rows (never a full sort of everything scanned).
type topN struct {
	order []Order
	n     int
	h     topHeap
}

type ranked struct {
	row  map[string]any
	keys []any // the values of the order's columns
	seq  int64
}

type topHeap struct {
	es   []ranked
	less func(a, b *ranked) bool // a before b in the answer
}

func (h *topHeap) Len() int { return len(h.es) }

// The heap's top is the row that would leave first: the last in order.
func (h *topHeap) Less(i, j int) bool { return h.less(&h.es[j], &h.es[i]) }
func (h *topHeap) Swap(i, j int)      { h.es[i], h.es[j] = h.es[j], h.es[i] }
func (h *topHeap) Push(x any)         { h.es = append(h.es, x.(ranked)) }
func (h *topHeap) Pop() any {
	n := len(h.es) - 1
	e := h.es[n]
	h.es = h.es[:n]
	return e
}

func newTopN(order []Order, n int) *topN {
	t := &topN{order: order, n: n}
	t.h.less = func(a, b *ranked) bool {
		for i, o := range t.order {
			c := orderCompare(a.keys[i], b.keys[i])
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return a.seq < b.seq
	}
	return t
}

// add offers row r, whose order columns hold keys, seq-th in scan order.
func (t *topN) add(r map[string]any, keys []any, seq int64) {
	e := ranked{row: r, keys: keys, seq: seq}
	if len(t.h.es) < t.n {
		heap.Push(&t.h, e)
		return
	}
	if t.h.less(&e, &t.h.es[0]) {
		t.h.es[0] = e
		heap.Fix(&t.h, 0)
	}
}

func (t *topN) result() []map[string]any {
	out := make([]map[string]any, len(t.h.es))
	for i := len(out) - 1; i >= 0; i-- {
		out[i] = heap.Pop(&t.h).(ranked).row
	}
	return out
}

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

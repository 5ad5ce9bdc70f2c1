package coproc

import (
	"bytes"
	"fmt"

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

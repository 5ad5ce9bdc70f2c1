package coproc

import (
	"cmp"
	"container/heap"
	"math"
)

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

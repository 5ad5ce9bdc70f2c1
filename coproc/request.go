package coproc

import "time"

// KeyRange is the keys [Start, End); a nil Start is the first key, a nil
// End is past the last.
type KeyRange struct {
	Start []byte `msgpack:"start"`
	End   []byte `msgpack:"end"`
}

// Expr is a filter expression over a row's columns. The key is the column
// "_key". Ops: "and" "or" (two or more args), "not" (one), "eq" "ne" "lt"
// "le" "gt" "ge" (two), "in" (one arg, tested against the list in Value),
// "prefix" (two: a string or bytes and its prefix), "isnull" (one), "col"
// (Col names the column), "const" (Value).
type Expr struct {
	Op  string `msgpack:"op"`
	Col string `msgpack:"col,omitempty"`
	// Value has no omitempty: msgpack's omitempty looks through the
	// interface, so false, 0, "" and an empty list would be dropped and
	// come back as nil (eq x 0 would turn into eq x NULL).
	Value any     `msgpack:"value"`
	Args  []*Expr `msgpack:"args,omitempty"`
}

// Agg is an aggregate: Func is "count", "sum", "min", "max" or "avg"; Col
// the column ("" with count is count(*)); As the output column's name
// (default e.g. "count(x)").
type Agg struct {
	Func string `msgpack:"func"`
	Col  string `msgpack:"col,omitempty"`
	As   string `msgpack:"as,omitempty"`
}

// Order is a sort key of a top-N request.
type Order struct {
	Col  string `msgpack:"col"`
	Desc bool   `msgpack:"desc,omitempty"`
}

// Request is a coprocessor request: which ranges to scan, which rows to
// keep (Filter), and what to return — the rows (projected to Columns), or
// aggregates (Aggs, by GroupBy), optionally the first Limit by OrderBy.
type Request struct {
	Ranges  []KeyRange `msgpack:"ranges"`
	Filter  *Expr      `msgpack:"filter,omitempty"`  // nil = every row
	Columns []string   `msgpack:"columns,omitempty"` // projection; nil = every column
	GroupBy []string   `msgpack:"group_by,omitempty"`
	Aggs    []Agg      `msgpack:"aggs,omitempty"`
	OrderBy []Order    `msgpack:"order_by,omitempty"` // with Limit: top-N
	Limit   int        `msgpack:"limit,omitempty"`    // 0 = no limit
	// PagingSize is the rows scanned per response; 0 = no paging; ignored
	// with Aggs, GroupBy and OrderBy (their answers need every row). With
	// Limit, each page returns at most Limit rows and one that reaches it
	// ends the request (ResumeKey nil); a client that wants Limit rows in
	// all lowers the Limit of the next page by the rows it already has.
	PagingSize int  `msgpack:"paging_size,omitempty"`
	Desc       bool `msgpack:"desc,omitempty"` // scan ranges in descending key order
}

// Response is a coprocessor answer.
type Response struct {
	// Rows are the projected rows, or one row per group for aggregates.
	Rows []map[string]any `msgpack:"rows"`
	// ResumeKey is non-nil when paging stopped early: send the request again
	// from here (Request.ResumeFrom).
	ResumeKey []byte `msgpack:"resume_key,omitempty"`
	Stats     Stats  `msgpack:"stats"`
}

// Stats describes how a request ran, as TiKV reports a coprocessor task:
// its time waiting in the queue apart from its time executing.
type Stats struct {
	RowsScanned  int64         `msgpack:"rows_scanned" json:"rows_scanned"`
	RowsReturned int64         `msgpack:"rows_returned" json:"rows_returned"`
	BytesRead    int64         `msgpack:"bytes_read" json:"bytes_read"`
	Steps        int           `msgpack:"steps" json:"steps"`
	Yields       int           `msgpack:"yields" json:"yields"`
	WaitTime     time.Duration `msgpack:"wait_ns" json:"wait_ns"`
	ExecTime     time.Duration `msgpack:"exec_ns" json:"exec_ns"`
}

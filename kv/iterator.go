package kv

import (
	"bytes"
	"context"
	"iter"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/scan"
)

// ScanOptions shape a Scan. A nil *ScanOptions means the zero value.
type ScanOptions struct {
	Limit    int  // at most this many pairs; 0 = no limit; < 0 is an error
	Reverse  bool // descending key order
	KeysOnly bool // values are not read (Value returns nil)
}

// ReadStats splits a read's time the way TiKV's execution details do:
// waiting in the queue versus executing steps.
type ReadStats struct {
	Steps, Yields, Wakes int
	WaitTime, ExecTime   time.Duration
	Rows, Bytes          int64
	// Buffered is the number of batches the scan holds now; MaxBuffered
	// the most it held at once (never more than its buffer of 2).
	Buffered, MaxBuffered int
}

// Scan reads the keys in [start, end) — nil start is the first key, nil end
// is past the last — and returns at once: the reading is a read-pool task
// that streams batches to the iterator, holding at most two at a time. A
// short scan (a Limit of at most 1,024) reads in one batch, on the
// caller's goroutine when a worker is idle, before Scan returns, as a Get
// would. The scan sees the store as of this call, whatever is written while
// it runs.
// Scan never fails at call time: errors surface through Err. It keeps its
// own copy of start and end.
func (db *DB) Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator {
	return db.scan(ctx, db, start, end, opts)
}

// scan is a Scan of v: db itself, one of its snapshots or a Txn's.
func (db *DB) scan(ctx context.Context, v view, start, end []byte, opts *ScanOptions) *Iterator {
	var so ScanOptions
	if opts != nil {
		so = *opts
	}
	start, end = cloneBounds(start, end)
	it := &Iterator{keysOnly: so.KeysOnly, start: start, end: end}
	src, err := db.startScan(ctx, scan.Spec{Start: start, End: end, Limit: so.Limit, Reverse: so.Reverse, KeysOnly: so.KeysOnly}, v)
	if err != nil {
		it.err = scanError(start, end, err)
		return it
	}
	it.src = src
	return it
}

// PrefixEnd is the end bound that makes [prefix, PrefixEnd(prefix)) every
// key with that prefix: the prefix with its last byte below 0xff raised by
// one and the 0xff bytes after it dropped; nil when there is none (an empty
// or all-0xff prefix), which as a Scan's end is open. It does not change
// its argument.
func PrefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := bytes.Clone(prefix[:i+1])
			end[i]++
			return end
		}
	}
	return nil
}

// startScan opens the scan's Pebble iterator and hands it to its reader:
// a pool task, or a direct reader that Close can end. It holds mu, shared,
// until then, so that Close cannot close Pebble under an iterator that
// nobody would close first (spawning never blocks — a short scan's inline
// step is bounded by the time slice — so holding it is cheap).
func (db *DB) startScan(ctx context.Context, spec scan.Spec, v view) (scan.Source, error) {
	if err := db.enter(); err != nil {
		return nil, err
	}
	defer db.mu.RUnlock()
	o, err := db.readOptions(ctx, spec.Start, false)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := scan.NewCursor(v.reader(), db.judging(v, 0, spec)) // validates spec
	if err != nil {
		return nil, err
	}
	if db.pool != nil {
		return scan.Spawn(ctx, db.pool, c, o) // closes c if refused
	}
	var d *scan.Direct
	d = scan.NewDirect(ctx, c, func() { db.untrack(d) })
	db.directMu.Lock()
	db.direct[d] = struct{}{} // not nil: Close has not begun, as we hold mu
	db.directMu.Unlock()
	return d, nil
}

// cloneBounds copies a scan's bounds into one allocation: Pebble reads them
// for as long as its iterator is open, and the caller may reuse its slices.
// An empty bound is the open bound, nil.
func cloneBounds(start, end []byte) ([]byte, []byte) {
	if len(start) == 0 && len(end) == 0 {
		return nil, nil
	}
	buf := make([]byte, 0, len(start)+len(end))
	var s, e []byte
	if len(start) > 0 {
		buf = append(buf, start...)
		s = buf[:len(start):len(start)]
	}
	if len(end) > 0 {
		buf = append(buf, end...)
		e = buf[len(buf)-len(end):]
	}
	return s, e
}

func (db *DB) untrack(d *scan.Direct) {
	db.directMu.Lock()
	if db.direct != nil {
		delete(db.direct, d)
	}
	db.directMu.Unlock()
}

// Iterator walks the pairs of a Scan. It is not safe for concurrent use,
// but Close may be called from any goroutine, also during Next.
//
// A scan read to its end — Next returned false, with or without a Limit —
// gives its buffers to later scans; one closed before its end leaves them
// to the garbage collector, since another goroutine's Close cannot know
// whether the reader still holds a Key or Value. A short scan that stops
// at its Limit should therefore let Next say so: YCSB E's scans through
// kv, 1–100 rows, allocated 1.3 KB each read to their end and 8.4 KB each
// closed at their last row (BenchmarkStore/ShortScan).
type Iterator struct {
	src scan.Source // nil when the scan failed to start, or for rows
	// rows is a backend's scan (NewIterator); nil for a Scan of *DB. A
	// pointer, so that a Scan of *DB stays in its allocation size class.
	rows *rowsReader
	// Touched only by the goroutine that calls Next.
	cur *scan.Batch // nil for rows
	i   int
	err error

	start, end []byte // for the words of errors
	keysOnly   bool
	// closed is set by Close, from any goroutine: Next then says there is
	// no pair, also within the batch it holds.
	closed atomic.Bool
}

// Next moves to the next pair and reports whether there is one. After it
// returns false, Err says whether the scan ended complete.
func (it *Iterator) Next() bool {
	if it.err != nil || it.closed.Load() {
		return false
	}
	if it.src == nil {
		return it.rows != nil && it.nextRow()
	}
	if it.cur != nil && it.i+1 < it.cur.Len() {
		it.i++
		return true
	}
	b, err := it.src.Next()
	it.cur, it.i = b, 0
	if err != nil {
		it.err = scanError(it.start, it.end, err)
	}
	return b != nil
}

// Key returns the current key; valid until the next call of Next.
func (it *Iterator) Key() []byte {
	if it.cur == nil {
		return it.rows.key() // a backend's, or nil
	}
	return it.cur.Key(it.i)
}

// Value returns the current value (nil for a KeysOnly scan); valid until
// the next call of Next.
func (it *Iterator) Value() []byte {
	if it.keysOnly {
		return nil
	}
	if it.cur == nil {
		return it.rows.value() // a backend's, or nil
	}
	return it.cur.Value(it.i)
}

// Err returns the error that ended the scan, or nil. It wraps (errors.Is)
// ErrInvalidRange, ErrClosed, ErrBusy, the context's error, or a read
// error, and names the range.
func (it *Iterator) Err() error { return it.err }

// Close ends the scan and frees its task at once: a waiting or queued task
// is ended on this goroutine, a running one at the end of its step, and
// Close returns when its Pebble iterator is closed. Next returns false from
// then on, also for rows already buffered. Idempotent.
func (it *Iterator) Close() error {
	it.closed.Store(true)
	if it.src == nil {
		if it.rows != nil {
			return it.rows.src.Close()
		}
		return nil
	}
	return it.src.Close()
}

// All returns the remaining pairs for a range loop; check Err after it.
// The key and value slices are valid only during their iteration.
func (it *Iterator) All() iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		for it.Next() {
			if !yield(it.Key(), it.Value()) {
				return
			}
		}
	}
}

// Stats reports how the scan has waited and run so far.
func (it *Iterator) Stats() ReadStats {
	if it.src == nil {
		if s, ok := it.rows.statsSource(); ok {
			return s.Stats()
		}
		return ReadStats{}
	}
	s := it.src.Stats()
	return ReadStats{
		Steps: s.Steps, Yields: s.Yields, Wakes: s.Wakes,
		WaitTime: s.WaitTime, ExecTime: s.ExecTime,
		Rows: s.Rows, Bytes: s.Bytes,
		Buffered: s.Buffered, MaxBuffered: s.MaxBuffered,
	}
}

package kv

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/scan"
)

// ScanOptions shape a Scan. A nil *ScanOptions means the zero value.
type ScanOptions struct {
	Limit    int  // at most this many pairs; 0 = no limit
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

// errIteratorClosed ends a scan task whose Iterator was closed.
var errIteratorClosed = errors.New("kv: iterator closed")

// Scan reads the keys in [start, end) — nil start is the first key, nil end
// is past the last — and returns at once: the reading is a read-pool task
// that streams batches to the iterator, holding at most two at a time. The
// scan sees the store as of this call, whatever is written while it runs.
// Scan never fails at call time: errors surface through Err.
func (db *DB) Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator {
	var so ScanOptions
	if opts != nil {
		so = *opts
	}
	it := &Iterator{db: db, keysOnly: so.KeysOnly}
	if len(start) == 0 {
		start = nil
	}
	if len(end) == 0 {
		end = nil
	}
	spec := scan.Spec{Start: start, End: end, Limit: so.Limit, Reverse: so.Reverse, KeysOnly: so.KeysOnly}
	if err := spec.Validate(); err != nil {
		if errors.Is(err, scan.ErrInvalidRange) {
			err = ErrInvalidRange
		}
		it.err = err
		return it
	}
	if err := ctx.Err(); err != nil {
		it.err = err
		return it
	}
	if err := db.enter(); err != nil {
		it.err = err
		return it
	}
	c, err := scan.NewCursor(db.pdb, spec)
	db.mu.RUnlock()
	if err != nil {
		it.err = err
		return it
	}
	if db.pool == nil {
		it.startDirect(ctx, c)
		return it
	}
	it.stream = scan.NewStream(scan.DefaultBuffer)
	h, err := db.pool.Spawn(ctx, scan.NewTask(c, it.stream), spawnOptions(ctx))
	if err != nil {
		_ = c.Close()
		it.err = poolErr(err)
		it.stream = nil
		return it
	}
	it.h = h
	return it
}

// Iterator walks the pairs of a Scan. It is not safe for concurrent use,
// but Close may be called from any goroutine, also during Next.
type Iterator struct {
	db       *DB
	keysOnly bool
	// Consumer side: touched only by the goroutine that calls Next.
	err error
	cur *scan.Batch
	i   int

	// A pooled scan: its task streams batches.
	stream *scan.Stream
	h      *readpool.Handle

	// A direct scan: Next fills batches on the caller's goroutine.
	dmu    sync.Mutex
	dc     *scan.Cursor
	dctx   context.Context
	dbatch scan.Batch
	dstats ReadStats
	dend   error // why the direct scan was ended from outside

	closeOnce sync.Once
	closed    atomic.Bool
}

// Next moves to the next pair and reports whether there is one. After it
// returns false, Err says whether the scan ended complete.
func (it *Iterator) Next() bool {
	if it.err != nil || it.closed.Load() || (it.stream == nil && it.dc == nil) {
		return false
	}
	if it.cur != nil && it.i+1 < it.cur.Len() {
		it.i++
		return true
	}
	var b *scan.Batch
	var err error
	if it.stream != nil {
		b, err = it.stream.Next(it.cur)
	} else {
		b, err = it.nextDirect()
	}
	it.cur, it.i = b, 0
	if err != nil {
		it.err = scanErr(err)
		return false
	}
	return b != nil
}

func scanErr(err error) error {
	switch {
	case errors.Is(err, errIteratorClosed):
		return nil
	case errors.Is(err, readpool.ErrClosed):
		return ErrClosed
	}
	return err
}

// Key returns the current key; valid until the next call of Next.
func (it *Iterator) Key() []byte {
	if it.cur == nil {
		return nil
	}
	return it.cur.Key(it.i)
}

// Value returns the current value (nil for a KeysOnly scan); valid until
// the next call of Next.
func (it *Iterator) Value() []byte {
	if it.cur == nil {
		return nil
	}
	if it.keysOnly {
		return nil
	}
	return it.cur.Value(it.i)
}

// Err returns the error that ended the scan, or nil: ErrInvalidRange,
// ErrClosed, ErrBusy, the context's error, or a read error.
func (it *Iterator) Err() error { return it.err }

// Close ends the scan and frees its task at once: a waiting or queued task
// is ended on this goroutine, a running one at the end of its step, and
// Close returns when its Pebble iterator is closed. Idempotent.
func (it *Iterator) Close() error {
	it.closeOnce.Do(func() {
		it.closed.Store(true)
		if it.h != nil {
			it.h.Cancel(errIteratorClosed)
			<-it.stream.Finished()
		}
		if it.dc != nil {
			it.endDirect(errIteratorClosed)
			it.db.untrack(it)
		}
	})
	return nil
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
	if it.h != nil {
		ts := it.h.Stats()
		ss := it.stream.Stats()
		return ReadStats{
			Steps: ts.Steps, Yields: ts.Yields, Wakes: ts.Wakes,
			WaitTime: ts.WaitTime, ExecTime: ts.ExecTime,
			Rows: ts.Rows, Bytes: ts.Bytes,
			Buffered: ss.Held, MaxBuffered: ss.MaxHeld,
		}
	}
	it.dmu.Lock()
	defer it.dmu.Unlock()
	return it.dstats
}

// startDirect registers a direct scan so that DB.Close can end it.
func (it *Iterator) startDirect(ctx context.Context, c *scan.Cursor) {
	it.dc, it.dctx = c, ctx
	db := it.db
	db.directMu.Lock()
	defer db.directMu.Unlock()
	if db.direct == nil { // Close ran since Scan checked
		_ = c.Close()
		it.dc = nil
		it.err = ErrClosed
		return
	}
	db.direct[it] = struct{}{}
}

func (db *DB) untrack(it *Iterator) {
	db.directMu.Lock()
	if db.direct != nil {
		delete(db.direct, it)
	}
	db.directMu.Unlock()
}

// nextDirect fills the next batch on the caller's goroutine.
func (it *Iterator) nextDirect() (*scan.Batch, error) {
	it.dmu.Lock()
	defer it.dmu.Unlock()
	if it.dend != nil {
		return nil, it.dend
	}
	if it.dc.Done() {
		it.closeDirectLocked()
		return nil, nil
	}
	if err := it.dctx.Err(); err != nil {
		it.closeDirectLocked()
		return nil, err
	}
	start := time.Now()
	rows, n, err := it.dc.Fill(&it.dbatch)
	it.dstats.Steps++
	it.dstats.ExecTime += time.Since(start)
	it.dstats.Rows += rows
	it.dstats.Bytes += n
	it.dstats.Buffered, it.dstats.MaxBuffered = 1, 1
	if err != nil {
		it.closeDirectLocked()
		return nil, err
	}
	if it.dbatch.Len() == 0 {
		it.closeDirectLocked()
		return nil, nil
	}
	return &it.dbatch, nil
}

// endDirect ends a direct scan from outside (Close of the iterator or of the
// store): it waits for a Next in progress, then closes the Pebble iterator.
func (it *Iterator) endDirect(why error) {
	it.dmu.Lock()
	defer it.dmu.Unlock()
	if it.dend == nil {
		it.dend = why
	}
	it.closeDirectLocked()
}

func (it *Iterator) closeDirectLocked() {
	if it.dc != nil {
		_ = it.dc.Close()
		it.dstats.Buffered = 0
	}
}

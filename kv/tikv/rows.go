package tikv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/coopkv/coopkv/kv"
)

// iterator is a client-go scanner (txnsnapshot's Scanner).
type iterator interface {
	Valid() bool
	Key() []byte
	Value() []byte
	Next() error
	Close()
}

// rows is a scan of the store's keys in [start, end) at one timestamp,
// region by region through client-go's scanner. It serves kv.NewIterator
// (a Scan) and scan.NewCursorOver (a coprocessor range when
// Options.CoprocessorConcurrency is 1; regionRows reads one otherwise):
// both read the same method set. It opens its scanner at the first Next, so a Scan never
// fails at call time; a store's scan takes its timestamp then and holds it
// against GC until the scan ends.
type rows struct {
	r          reader
	ctx        context.Context
	start, end []byte
	reverse    bool
	keysOnly   bool
	limit      int

	mu      sync.Mutex // Close may come from another goroutine
	it      iterator   // nil until the first Next, and after the end
	lo      []byte     // the scan's lower bound, a store key, once it is open
	release func()     // lets the held timestamp go
	ts      uint64     // the scan's timestamp, once it is open
	seen    int
	err     error // why the scan ended early
	done    bool
	kill    killer // ends client-go's retries at ctx's end or Close
}

// Next implements kv.Rows and scan.Rows. The key and value alias the
// scanner's batch: valid until the next call.
func (w *rows) Next() ([]byte, []byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, nil, w.err
	}
	if w.done || (w.limit > 0 && w.seen >= w.limit) {
		w.finish()
		return nil, nil, io.EOF
	}
	if err := w.r.s.enter(); err != nil {
		return w.fail(err)
	}
	defer w.r.s.leave()
	if w.r.open != nil && !w.r.open() {
		return w.fail(kv.ErrClosed)
	}
	if err := w.ctx.Err(); err != nil {
		return w.fail(err)
	}
	for {
		var err error
		switch {
		case w.it == nil && w.empty():
			w.finish()
			return nil, nil, io.EOF
		case w.it == nil:
			err = w.open()
		case atLowerBound(w.it, w.reverse, w.lo):
			w.finish()
			return nil, nil, io.EOF
		default:
			err = w.it.Next()
		}
		if err != nil {
			return w.fail(w.r.s.at(storeErr(w.r.s.callErr(w.ctx, err)), w.lo))
		}
		if !w.it.Valid() {
			w.finish()
			return nil, nil, io.EOF
		}
		k, err := w.r.s.ks.userKey(w.it.Key())
		if err != nil {
			return w.fail(err)
		}
		v, ok, err := w.r.row(k, w.it.Value(), w.ts, w.keysOnly)
		if err != nil {
			return w.fail(err)
		}
		if !ok {
			continue
		}
		w.seen++
		return k, v, nil
	}
}

// empty reports whether [start, end) holds no key (start == end), which
// is then not scanned: client-go's reverse scanner over an empty range at
// a region boundary asks the region before the boundary for keys from
// the boundary, outside that region (the mock cluster panics on it).
func (w *rows) empty() bool {
	lo, hi := w.r.s.ks.bounds(w.start, w.end)
	return bytes.Compare(lo, hi) >= 0
}

// atLowerBound reports whether a reverse scanner stands on lo, its lower
// bound: the last key of its range, so it is not moved on. client-go's
// reverse scanner whose batch ends there would go on from lo, and when lo
// is a region boundary it asks the region before it for keys from lo,
// outside that region (the mock cluster panics on it).
func atLowerBound(it iterator, reverse bool, lo []byte) bool {
	return reverse && it.Valid() && bytes.Equal(it.Key(), lo)
}

// open takes the scan's timestamp and opens its scanner, which reads the
// first batch.
func (w *rows) open() error {
	ts := w.r.ts
	if ts == 0 {
		var err error
		if ts, err = w.r.s.now(w.ctx); err != nil {
			return err
		}
		w.release = w.r.s.held.add(ts)
	}
	w.ts = ts
	w.kill.arm(w.ctx, w.r.s.closingCtx)
	snap, err := w.r.scanSnapshot(w.ctx, ts, &w.kill)
	if err != nil {
		return err
	}
	// Values are read for KeysOnly too: the expiry is in the value.
	snap.SetScanBatchSize(scanBatch(w.limit))
	lo, hi := w.r.s.ks.bounds(w.start, w.end)
	w.lo = lo
	if w.reverse {
		w.it, err = snap.IterReverse(hi, lo)
	} else {
		w.it, err = snap.Iter(lo, hi)
	}
	return err
}

// fail ends the scan with err, worded with its range.
func (w *rows) fail(err error) ([]byte, []byte, error) {
	w.err = scanErr(w.start, w.end, err)
	w.finish()
	return nil, nil, w.err
}

// finish frees the scanner and the timestamp.
func (w *rows) finish() {
	w.done = true
	if w.it != nil {
		w.it.Close()
		w.it = nil
	}
	if w.release != nil {
		w.release()
		w.release = nil
	}
	w.kill.disarm()
}

// Close implements kv.Rows and scan.Rows. A Next blocked in client-go's
// retries (from another goroutine) gives up at its next backoff, so Close
// does not wait out the retries for it.
func (w *rows) Close() error {
	w.kill.kill()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finish()
	return nil
}

// scanErr is the error of a scan of [start, end).
func scanErr(start, end []byte, err error) error {
	return fmt.Errorf("tikv: scan [%s, %s): %w", bound(start, "-inf"), bound(end, "+inf"), err)
}

func bound(b []byte, open string) string {
	if b == nil {
		return open
	}
	return fmt.Sprintf("%q", b)
}

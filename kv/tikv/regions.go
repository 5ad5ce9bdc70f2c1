package tikv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/tikv/client-go/v2/tikv"
)

// locateBackoff is how long (ms) planning a range may back off while the
// region cache loads its regions from PD: client-go's scanner allows as
// long for one batch.
const locateBackoff = 20_000

// regionRows is a coprocessor range read region-parallel: [start, end) is
// split at the region boundaries client-go's region cache knows, and up to
// par sub-ranges are read ahead at once, each by its own snapshot scanner
// at the same timestamp into a buffer of at most one scan batch. They are
// consumed strictly in key order (descending for reverse), so the rows are
// the sequential read's. A split or merge during the read changes nothing
// but the RPCs: each sub-scan is a plain scanner over its key range, which
// client-go retries across region changes; the sub-ranges are contiguous,
// so no key falls between them however stale the cache was.
//
// Every reader goroutine ends before Close (or the end of the rows, the
// limit, an error) returns; each enters the store's gate only around its
// RPCs, so the store's Close waits for those and a reader blocked on its
// buffer never holds Close up.
type regionRows struct {
	r          reader // a view with its timestamp: ts != 0
	ctx        context.Context
	start, end []byte
	reverse    bool
	keysOnly   bool
	limit      int
	par        int

	mu      sync.Mutex // Close may come from another goroutine
	subs    []*subScan // nil until the first Next
	next    int        // the sub-scan being consumed
	started int        // the sub-scans started: [0, started)
	cur     []pair     // the batch being consumed
	pos     int
	seen    int
	err     error // why the rows ended early
	done    bool
	stop    chan struct{} // closed when the rows end: the readers return
	stopped bool          // stop is closed
	wg      sync.WaitGroup
	kill    killer // ends the readers' client-go retries at ctx's end or the rows' end
}

// subScan is one region's share of the range, in store keys.
type subScan struct {
	lo, hi []byte
	ch     chan batch // unbuffered: the reader holds one batch at most
}

// batch is what a sub-scan hands over: rows, then last (the sub-scan's
// end) or err (then last too).
type batch struct {
	pairs []pair
	last  bool
	err   error
}

// pair aliases a scanner batch's key and value (store key, encoded
// value): client-go allocates each batch afresh, so they stay valid after
// the scanner moves on.
type pair struct{ key, value []byte }

// Next implements scan.Rows. The key and value are the caller's until the
// next call (they alias a batch nothing else reuses).
func (w *regionRows) Next() ([]byte, []byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return nil, nil, w.err
	}
	k, v, err := w.row()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			w.err = scanErr(w.start, w.end, err)
			err = w.err
		}
		w.finish()
	}
	return k, v, err
}

// row is Next's row, or why there is none (io.EOF at the end).
func (w *regionRows) row() ([]byte, []byte, error) {
	if w.done || (w.limit > 0 && w.seen >= w.limit) {
		return nil, nil, io.EOF
	}
	if _, err := w.r.begin(w.ctx); err != nil { // closed store or snapshot, ended ctx
		return nil, nil, err
	}
	defer w.r.s.leave()
	for {
		for w.pos >= len(w.cur) {
			if err := w.refill(); err != nil {
				return nil, nil, err
			}
		}
		p := w.cur[w.pos]
		w.pos++
		k, err := w.r.s.ks.userKey(p.key)
		if err != nil {
			return nil, nil, err
		}
		v, ok, err := w.r.row(k, p.value, w.r.ts, w.keysOnly)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue
		}
		w.seen++
		return k, v, nil
	}
}

// refill takes the next batch, in key order; io.EOF after the last
// sub-scan.
func (w *regionRows) refill() error {
	if w.subs == nil {
		if err := w.plan(); err != nil {
			return err
		}
	}
	if w.next >= len(w.subs) {
		return io.EOF
	}
	var b batch
	select {
	case b = <-w.subs[w.next].ch:
	case <-w.ctx.Done(): // the readers see it too, and send nothing more
		return w.ctx.Err()
	}
	if b.err != nil {
		return b.err
	}
	w.cur, w.pos = b.pairs, 0
	if b.last {
		w.next++
		w.launch()
	}
	return nil
}

// plan splits the range at region boundaries and starts the first
// readers.
func (w *regionRows) plan() error {
	lo, hi := w.r.s.ks.bounds(w.start, w.end)
	if bytes.Compare(lo, hi) >= 0 { // nothing to read (see rows.empty)
		w.subs = []*subScan{}
		return nil
	}
	bo := tikv.NewBackofferWithVars(w.ctx, locateBackoff, nil)
	locs, err := w.r.s.kvs.GetRegionCache().LocateKeyRange(bo, lo, hi)
	if err != nil {
		return storeErr(err)
	}
	// Only the boundaries strictly inside (lo, hi) count: the sub-ranges
	// tile the range whatever the cache returned.
	from := lo
	for _, l := range locs {
		if len(l.EndKey) == 0 || bytes.Compare(l.EndKey, from) <= 0 || bytes.Compare(l.EndKey, hi) >= 0 {
			continue
		}
		w.subs = append(w.subs, &subScan{lo: from, hi: l.EndKey, ch: make(chan batch)})
		from = l.EndKey
	}
	w.subs = append(w.subs, &subScan{lo: from, hi: hi, ch: make(chan batch)})
	if w.reverse {
		slices.Reverse(w.subs)
	}
	w.stop = make(chan struct{})
	w.kill.arm(w.ctx, w.r.s.closingCtx)
	w.launch()
	return nil
}

// launch starts the readers of the sub-scans up to par ahead of the one
// being consumed.
func (w *regionRows) launch() {
	for ; w.started < len(w.subs) && w.started < w.next+w.par; w.started++ {
		w.wg.Add(1)
		go w.read(w.subs[w.started])
	}
}

// read is a sub-scan's reader: it hands over its rows a batch at a time
// until the sub-scan ends, fails, or the rows end.
func (w *regionRows) read(s *subScan) {
	defer w.wg.Done()
	size, n := scanBatch(w.limit), 0
	it, err := w.open(s)
	if err != nil {
		w.send(s, batch{err: err, last: true})
		return
	}
	defer it.Close()
	taken := false // the scanner's current row is handed over already
	for {
		var b batch
		for len(b.pairs) < size {
			if taken {
				// At the limit, or on the range's last key, the scanner
				// is not moved on: that would cost an RPC, and it may go
				// astray (see atLowerBound).
				if (w.limit > 0 && n >= w.limit) || atLowerBound(it, w.reverse, s.lo) {
					b.last = true
					break
				}
				if err := w.step(it); err != nil {
					b.err = err
					break
				}
				taken = false
			}
			if !it.Valid() || (w.limit > 0 && n >= w.limit) {
				b.last = true
				break
			}
			b.pairs = append(b.pairs, pair{it.Key(), it.Value()})
			n++
			taken = true // advanced only at the next batch: one batch held
		}
		if b.err != nil && len(b.pairs) > 0 { // the rows before the error first
			if !w.send(s, batch{pairs: b.pairs}) {
				return
			}
			b.pairs = nil
		}
		b.last = b.last || b.err != nil
		if !w.send(s, b) || b.last {
			return
		}
	}
}

// open opens the sub-scan's scanner at the view's timestamp, which reads
// its first batch.
func (w *regionRows) open(s *subScan) (iterator, error) {
	if err := w.r.s.enter(); err != nil {
		return nil, err
	}
	defer w.r.s.leave()
	snap, err := w.r.scanSnapshot(w.ctx, w.r.ts, &w.kill) // one each: its settings are not shared
	if err != nil {
		return nil, err
	}
	// Values are read for KeysOnly too: the expiry is in the value.
	snap.SetScanBatchSize(scanBatch(w.limit))
	var it iterator
	if w.reverse {
		it, err = snap.IterReverse(s.hi, s.lo)
	} else {
		it, err = snap.Iter(s.lo, s.hi)
	}
	return it, w.r.s.at(storeErr(w.r.s.callErr(w.ctx, err)), s.lo)
}

// step moves the scanner on, inside the store's gate: it may send an RPC.
func (w *regionRows) step(it iterator) error {
	if err := w.r.s.enter(); err != nil {
		return err
	}
	defer w.r.s.leave()
	return storeErr(w.r.s.callErr(w.ctx, it.Next()))
}

// send hands b over; false when the rows ended first.
func (w *regionRows) send(s *subScan, b batch) bool {
	select {
	case s.ch <- b:
		return true
	case <-w.stop:
	case <-w.ctx.Done():
	}
	return false
}

// finish stops the readers and waits for them: those in client-go's
// retries give up at their next backoff (killer).
func (w *regionRows) finish() {
	w.done = true
	w.cur = nil
	if w.stop != nil && !w.stopped {
		w.kill.kill()
		close(w.stop) // the readers read w.stop: it is never reassigned
		w.stopped = true
		w.wg.Wait()
	}
	w.kill.disarm()
}

// Close implements scan.Rows.
func (w *regionRows) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finish()
	return nil
}

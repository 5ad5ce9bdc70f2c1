package scan

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/readpool"
)

// Source is a running scan as its consumer sees it: the batches of one
// Cursor, in order, whoever reads them. It owns the cursor (and with it the
// Pebble iterator) and, for a pooled scan, the read-pool task.
//
// A Source is read by one goroutine (Next); Stats, Close and End may be
// called from any goroutine, also while Next runs.
type Source interface {
	// Next releases the batch the previous call returned — its keys and
	// values are dead from here on — and returns the next one. At the end
	// it returns nil and why the scan ended: nil when it was read to the
	// end or closed by Close, else the read error, the context's error,
	// the pool's error, or the error given to End.
	Next() (*Batch, error)
	// Stats returns how the scan has waited and run so far.
	Stats() Stats
	// Close ends the scan and frees what it holds at once; it returns when
	// the Pebble iterator is closed. Next then returns nil, nil, whatever
	// was buffered. Close is idempotent.
	Close() error
	// End ends the scan from outside with err (e.g. the store closing):
	// like Close, but Next then reports err. It returns when the Pebble
	// iterator is closed. A scan whose reading has already ended keeps its
	// ending (and a pooled one its buffered batches). End(nil) ends it as
	// complete.
	End(err error)
}

// Stats describes how a scan has waited and run so far. For a direct scan
// every batch is one step and there is no waiting.
type Stats struct {
	Steps, Yields, Pendings, Wakes int
	WaitTime, ExecTime             time.Duration
	Rows, Bytes                    int64
	// Buffered is the number of batches held now; MaxBuffered the most
	// held at once.
	Buffered, MaxBuffered int
}

// errClosed is the reason Close gives a pooled scan's task; Next turns it
// into a plain end.
var errClosed = errors.New("scan closed by its consumer")

// Pooled is a scan run as a read-pool task that streams its batches through
// a bounded Stream of DefaultBuffer slots: it reserves a slot before it
// reads a batch, so it holds at most that many, and it yields between
// batches when the pool says so. Its cursor's iterator pins one snapshot
// across every yield.
type Pooled struct {
	s   *stream
	h   *readpool.Handle
	cur *Batch // the batch the consumer holds; touched only by Next
	// end is set by the first Close or End, so that Next stops at once
	// rather than hand out batches that were buffered before.
	end atomic.Pointer[error]
}

// Spawn starts c as a task in p and returns its reader. The reader owns c
// from this call on: when the pool refuses the task (readpool.ErrBusy,
// readpool.ErrClosed) Spawn closes c before it returns the error, so the
// caller may hold its own lock against the store closing across the call
// (Spawn never blocks). A ctx that is already done ends the task at once;
// Next then reports ctx.Err().
//
// A short scan (ShortLimit) runs its first step — usually all of it — on
// the caller's goroutine when a worker is idle and nothing waits
// (SpawnOptions.Inline), as a Get does: its caller would only wait for the
// rows anyway, and a scan of a hundred rows then costs no hand-off. Spawn
// returns after that step, which is bounded by the time slice.
func Spawn(ctx context.Context, p *readpool.Pool, c *Cursor, o readpool.SpawnOptions) (*Pooled, error) {
	if ShortLimit(c.spec.Limit) {
		o.Inline = true
	}
	s := newStream(DefaultBuffer)
	h, err := p.Spawn(ctx, newTask(c, s), o)
	if err != nil {
		// The pool did not take the task, so its Done will not run.
		_ = c.Close()
		return nil, err
	}
	return &Pooled{s: s, h: h}, nil
}

// Next implements Source. It waits for the task to fill the next batch.
func (r *Pooled) Next() (*Batch, error) {
	if e := r.end.Load(); e != nil {
		return nil, endErr(*e)
	}
	b, err := r.s.Next(r.cur)
	r.cur = b
	if b == nil {
		return nil, endErr(err)
	}
	return b, nil
}

func endErr(err error) error {
	if errors.Is(err, errClosed) {
		return nil
	}
	return err
}

// Stats implements Source.
func (r *Pooled) Stats() Stats {
	ts := r.h.Stats()
	ss := r.s.Stats()
	return Stats{
		Steps: ts.Steps, Yields: ts.Yields, Pendings: ts.Pendings, Wakes: ts.Wakes,
		WaitTime: ts.WaitTime, ExecTime: ts.ExecTime,
		Rows: ts.Rows, Bytes: ts.Bytes,
		Buffered: ss.Held, MaxBuffered: ss.MaxHeld,
	}
}

// Close implements Source: a queued or waiting task is ended on this
// goroutine, a running one at the end of its step.
func (r *Pooled) Close() error {
	err := errClosed
	r.end.Store(&err) // after Close, Next ends even if End came first
	r.h.Cancel(err)
	<-r.s.Finished()
	return nil
}

// End implements Source.
func (r *Pooled) End(err error) {
	select {
	case <-r.s.Finished():
		return
	default:
	}
	if err == nil {
		err = errClosed
	}
	// A task that finishes on its own meanwhile leaves its ending in the
	// stream, but Next reports err: the two raced, and End's caller wins.
	r.end.CompareAndSwap(nil, &err)
	r.h.Cancel(err)
	<-r.s.Finished()
}

// Direct is a scan that fills its batches on the goroutine that calls Next
// — a store without a pool, or an executor that already runs inside a
// read-pool step and asks ShouldYield between batches itself. It holds one
// batch, reused by every Next.
type Direct struct {
	ctx   context.Context
	ended func()

	// mu is held by Next while it reads, so that Close and End, from any
	// goroutine, wait for the read in progress before they close the
	// iterator under it.
	mu    sync.Mutex
	c     *Cursor // nil once closed
	batch Batch
	stats Stats
	err   error // why the scan ended early; nil for a complete or closed scan
}

// NewDirect returns a reader of c that checks ctx before every batch. It
// owns c. ended, if not nil, is called once when the scan ends, however it
// ends, after c is closed and outside the reader's lock (a store uses it to
// forget the scan).
func NewDirect(ctx context.Context, c *Cursor, ended func()) *Direct {
	return &Direct{ctx: ctx, c: c, ended: ended}
}

// Next implements Source. The returned batch is the reader's own, refilled
// by the next call.
func (d *Direct) Next() (*Batch, error) {
	d.mu.Lock()
	b, err, closed := d.nextLocked()
	d.mu.Unlock()
	if closed {
		d.notifyEnded()
	}
	return b, err
}

func (d *Direct) nextLocked() (b *Batch, err error, closed bool) {
	if d.c == nil {
		return nil, d.err, false
	}
	if d.c.Done() {
		return nil, nil, d.closeLocked(nil)
	}
	if err := d.ctx.Err(); err != nil {
		return nil, err, d.closeLocked(err)
	}
	start := time.Now()
	rows, n, err := d.c.Fill(&d.batch)
	d.stats.Steps++
	d.stats.ExecTime += time.Since(start)
	d.stats.Rows += rows
	d.stats.Bytes += n
	d.stats.Buffered, d.stats.MaxBuffered = 1, 1
	if err != nil {
		return nil, err, d.closeLocked(err)
	}
	if d.batch.Len() == 0 {
		return nil, nil, d.closeLocked(nil)
	}
	return &d.batch, nil, false
}

// closeLocked closes the cursor, recording why the scan ended, and reports
// whether this call closed it.
func (d *Direct) closeLocked(why error) bool {
	if d.c == nil {
		return false
	}
	_ = d.c.Close()
	d.c = nil
	d.err = why
	d.stats.Buffered = 0
	return true
}

func (d *Direct) notifyEnded() {
	if d.ended != nil {
		d.ended()
	}
}

// Stats implements Source. It waits for a Next in progress.
func (d *Direct) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Close implements Source. It waits for a Next in progress.
func (d *Direct) Close() error {
	d.mu.Lock()
	closed := d.closeLocked(nil)
	d.err = nil
	d.mu.Unlock()
	if closed {
		d.notifyEnded()
	}
	return nil
}

// End implements Source. It waits for a Next in progress.
func (d *Direct) End(err error) {
	d.mu.Lock()
	if d.c != nil && d.c.Done() {
		err = nil // it has read its last row: it keeps its ending, complete
	}
	closed := d.closeLocked(err)
	d.mu.Unlock()
	if closed {
		d.notifyEnded()
	}
}

var (
	_ Source = (*Pooled)(nil)
	_ Source = (*Direct)(nil)
)

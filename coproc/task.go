package coproc

import (
	"bytes"
	"context"
	"sync/atomic"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/scan"
)

// Opener opens a cursor over one range of a request's snapshot. The store
// gives each request one that reads one Pebble snapshot, so every range
// sees the same state of the store.
type Opener func(spec scan.Spec) (*scan.Cursor, error)

// MaxBatchRows caps a coprocessor batch: decoding and folding a row costs
// more than copying it, so a batch of 256 rows is a unit of work (~0.1 ms
// here) as short as a plain scan's batch of 1,024, and a Get that arrives
// waits for no more than that.
const MaxBatchRows = 256

// Task runs a request as one read-pool task: it pulls the ranges' batches
// through the executors, a batch at a time, asking before each batch
// whether to yield (the time slice, the budget, or more urgent work), and
// charging what it read.
type Task struct {
	ctx     context.Context
	req     *Request
	x       *executor
	open    Opener
	release func()
	i       int          // the range being read, in scan order
	src     *scan.Direct // its reader; nil between ranges
	resume  []byte
	rows    []map[string]any
	err     error
	done    chan struct{}
	// waiting is set once the caller is about to block in Wait: a worker
	// whose step ends the task then hands its P to the caller at once
	// (readpool.Awaited) rather than keep it for a quarter slice.
	waiting atomic.Bool
}

// NewTask validates req and returns its task. open reads the request's
// snapshot; release, called once when the task ends however it ends, frees
// it. On an error nothing is opened and release is not called.
func NewTask(ctx context.Context, req *Request, open Opener, release func()) (*Task, error) {
	if req == nil {
		return nil, ErrInvalidRequest
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	t := &Task{ctx: ctx, req: req, x: newExecutor(req), open: open, release: release, done: make(chan struct{})}
	t.x.trackKey = t.paging()
	return t, nil
}

// paging reports whether the request pages: rows, not aggregates or top-N.
func (t *Task) paging() bool {
	return t.req.PagingSize > 0 && t.x.aggs == nil && t.x.top == nil
}

// Step implements readpool.Task.
func (t *Task) Step(sc *readpool.StepContext) readpool.Status {
	if !t.work(sc.ShouldYield, sc.Charge) {
		return readpool.Yield
	}
	return readpool.Ready
}

// Run runs the whole request on the calling goroutine, for a store without
// a pool, then ends the task as Done does.
func (t *Task) Run() {
	t.work(func() bool { return false }, func(int64, int64) {})
	t.Done(nil)
}

// work reads batches until the request is answered (true) or shouldYield
// says to stop for now (false). shouldYield is asked before every batch.
func (t *Task) work(shouldYield func() bool, charge func(rows, bytes int64)) bool {
	n := len(t.req.Ranges)
	for {
		if shouldYield() {
			return false
		}
		if t.src == nil {
			if t.i == n {
				return true
			}
			r := t.req.Ranges[t.i]
			if t.req.Desc {
				r = t.req.Ranges[n-1-t.i]
			}
			spec := scan.Spec{Start: r.Start, End: r.End, Reverse: t.req.Desc, MaxBatch: MaxBatchRows}
			if t.paging() {
				spec.Limit = t.req.PagingSize - int(t.x.scanned)
			}
			c, err := t.open(spec)
			if err != nil {
				t.err = err
				return true
			}
			t.src = scan.NewDirect(t.ctx, c, nil)
		}
		b, err := t.src.Next()
		if err != nil {
			t.err = err
			return true
		}
		if b == nil {
			_ = t.src.Close()
			t.src = nil
			t.i++
			continue
		}
		rows, bytes := t.x.scanned, t.x.bytes
		err = t.x.feed(b)
		charge(t.x.scanned-rows, t.x.bytes-bytes)
		if err != nil {
			t.err = err
			return true
		}
		if t.x.done {
			return true
		}
		if t.paging() && t.x.scanned >= int64(t.req.PagingSize) {
			t.resume = resumeAfter(t.x.lastKey, t.req.Desc)
			return true
		}
	}
}

// resumeAfter is the ResumeKey after key, the last key scanned: ascending,
// the first key after it (the next start); descending, key itself (the
// next exclusive end).
func resumeAfter(key []byte, desc bool) []byte {
	k := bytes.Clone(key)
	if !desc {
		k = append(k, 0)
	}
	return k
}

// Waiting implements readpool.Awaited: whether the caller waits in Wait.
func (t *Task) Waiting() bool { return t.waiting.Load() }

var _ readpool.Awaited = (*Task)(nil)

// Done implements readpool.Task: it closes the range being read and frees
// the snapshot, and settles the answer.
func (t *Task) Done(err error) {
	if t.src != nil {
		_ = t.src.Close()
		t.src = nil
	}
	if t.release != nil {
		t.release()
	}
	if t.err == nil {
		t.err = err
	}
	if t.err == nil {
		t.rows, t.err = t.x.result()
	}
	close(t.done)
}

// Wait waits for the task to end and returns its answer (Stats' row and
// byte counts filled in; its times are the caller's to add).
func (t *Task) Wait() (*Response, error) {
	t.waiting.Store(true)
	<-t.done
	if t.err != nil {
		return nil, t.err
	}
	return &Response{
		Rows:      t.rows,
		ResumeKey: t.resume,
		Stats:     Stats{RowsScanned: t.x.scanned, RowsReturned: t.x.returned, BytesRead: t.x.bytes},
	}, nil
}

// ResumeFrom returns a copy of r that continues exactly where a paged
// response stopped: no row is returned twice or skipped. key is the
// response's ResumeKey — ascending, the first key not yet scanned (the next
// start); descending, the last key scanned (the next exclusive end).
func (r *Request) ResumeFrom(key []byte) *Request {
	c := *r
	c.Ranges = nil
	for _, kr := range r.Ranges {
		if !r.Desc {
			if kr.End != nil && bytes.Compare(kr.End, key) <= 0 {
				continue // wholly before key: done
			}
			if kr.Start == nil || bytes.Compare(kr.Start, key) < 0 {
				kr.Start = bytes.Clone(key)
			}
		} else {
			if kr.Start != nil && bytes.Compare(kr.Start, key) >= 0 {
				continue // wholly at or after key: done
			}
			if kr.End == nil || bytes.Compare(kr.End, key) > 0 {
				kr.End = bytes.Clone(key)
			}
		}
		c.Ranges = append(c.Ranges, kr)
	}
	if len(c.Ranges) == 0 {
		// Nothing is left: an empty range, so the request stays valid.
		c.Ranges = []KeyRange{{Start: bytes.Clone(key), End: bytes.Clone(key)}}
	}
	return &c
}

package kv

import (
	"bytes"
	"io"
	"sync"
)

// mergedRows is MergeOwnWrites' Rows. Only the reader touches the merge's
// state; ended is shared with Close.
type mergedRows struct {
	under   *Iterator
	own     []OwnWrite
	limit   int
	reverse bool
	hooks   MergeHooks

	uValid bool // under holds a row not yet merged
	uDone  bool
	oi, n  int // the next of own; the rows returned

	mu    sync.Mutex
	ended bool
}

func (r *mergedRows) Next() (key, value []byte, err error) {
	for {
		if r.limit > 0 && r.n == r.limit {
			r.end(false)
			_ = r.under.Close()
			return nil, nil, io.EOF
		}
		if !r.uValid && !r.uDone {
			if r.under.Next() {
				r.uValid = true
			} else if err := r.under.Err(); err != nil {
				return nil, nil, err
			} else {
				r.uDone = true
			}
		}
		haveOwn := r.oi < len(r.own)
		if !r.uValid && !haveOwn {
			r.end(true) // every key of the range was seen
			return nil, nil, io.EOF
		}
		c := 1 // > 0: own comes first
		if r.uValid && haveOwn {
			c = bytes.Compare(r.under.Key(), r.own[r.oi].Key)
			if r.reverse {
				c = -c
			}
		} else if r.uValid {
			c = -1
		}
		if c < 0 {
			r.uValid = false
			r.row(r.under.Key(), true)
			return r.under.Key(), r.under.Value(), nil
		}
		if c == 0 {
			r.uValid = false // the own write replaces it
		}
		o := r.own[r.oi]
		r.oi++
		if o.Delete {
			continue
		}
		r.row(o.Key, false)
		return o.Key, o.Value, nil
	}
}

// row counts a row returned and tells the hook.
func (r *mergedRows) row(key []byte, fromSnapshot bool) {
	r.n++
	if r.hooks.Row != nil {
		r.hooks.Row(key, fromSnapshot)
	}
}

// end tells the hook how the scan stopped, once.
func (r *mergedRows) end(complete bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.ended = true
	if r.hooks.End != nil {
		r.hooks.End(complete)
	}
}

func (r *mergedRows) Close() error {
	_ = r.under.Close() // first: a Next waiting on it returns
	r.end(false)
	return nil
}

// Stats is the snapshot scan's.
func (r *mergedRows) Stats() ReadStats { return r.under.Stats() }

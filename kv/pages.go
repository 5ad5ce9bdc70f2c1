package kv

import (
	"bytes"
	"context"
	"fmt"
	"iter"

	"github.com/coopkv/coopkv/coproc"
)

// CoprocessorRunner is what [CoprocessorPages] sends the pages of a
// request to: any [Store], a *DB, or a *[Snapshot] — whose pages then all
// read one view of the store, where a DB's pages each read the store as it
// is when that page runs.
type CoprocessorRunner interface {
	Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error)
}

// CoprocessorPages runs req on s to its end, a page at a time, and gives
// each response. A paged request (req.PagingSize > 0) is sent again from
// each response's ResumeKey ([coproc.Request.ResumeFrom]) until a response
// has none, so every row comes once, in order, whatever the direction. A
// request that does not page — no PagingSize, or Aggs, GroupBy or OrderBy,
// whose answers need every row — gives one page.
//
// req.Limit counts the rows of all pages together: each page after the
// first is sent with the Limit that is left, and none is sent once the
// rows given reach it. req itself is not changed.
//
// A consumer that stops ranging stops the paging: no further request is
// sent. The first error — the store's own, returned as it is, or a store
// that resumes at the key it already gave — is given with a nil response
// after the pages before it, and ends the sequence. Each range over the
// sequence runs the request anew.
func CoprocessorPages(ctx context.Context, s CoprocessorRunner, req *coproc.Request) iter.Seq2[*coproc.Response, error] {
	return func(yield func(*coproc.Response, error) bool) {
		r := req
		var prev []byte // the last ResumeKey, to catch a store that stands still
		returned := 0
		for page := 1; ; page++ {
			resp, err := s.Coprocessor(ctx, r)
			if err == nil && resp.ResumeKey != nil && prev != nil && bytes.Equal(resp.ResumeKey, prev) {
				// Sending it again would loop for ever.
				err = fmt.Errorf("kv: coprocessor: page %d resumes at %q again: the store made no progress", page, resp.ResumeKey)
				resp = nil
			}
			if err != nil {
				yield(nil, err)
				return
			}
			// Taken before the consumer has the response, which is its to
			// change. (bytes.Clone keeps nil nil.)
			next, rows := bytes.Clone(resp.ResumeKey), len(resp.Rows)
			if !yield(resp, nil) || next == nil {
				return
			}
			prev = next
			returned += rows
			r = r.ResumeFrom(next)
			if req.Limit > 0 {
				// Each page's Limit is its own: what is left of the caller's.
				if r.Limit = req.Limit - returned; r.Limit <= 0 {
					return
				}
			}
		}
	}
}

package kv

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// pagingStore is a Store that records the coprocessor requests it is sent,
// and fails the one numbered failAt (from 1; 0 = none) with err.
type pagingStore struct {
	Store
	reqs   []*coproc.Request
	failAt int
	err    error
}

func (s *pagingStore) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	s.reqs = append(s.reqs, req)
	if len(s.reqs) == s.failAt {
		return nil, s.err
	}
	return s.Store.Coprocessor(ctx, req)
}

// limits are the Limits of the requests s was sent.
func (s *pagingStore) limits() []int {
	var l []int
	for _, r := range s.reqs {
		l = append(l, r.Limit)
	}
	return l
}

// runnerFunc is a CoprocessorRunner of one function: a store that does
// what a test says.
type runnerFunc func(ctx context.Context, req *coproc.Request) (*coproc.Response, error)

func (f runnerFunc) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	return f(ctx, req)
}

// allPages ranges over CoprocessorPages to its end, requiring no error,
// and returns every page.
func allPages(t *testing.T, s CoprocessorRunner, req *coproc.Request) []*coproc.Response {
	t.Helper()
	var pages []*coproc.Response
	for resp, err := range CoprocessorPages(t.Context(), s, req) {
		require.NoError(t, err)
		require.NotNil(t, resp)
		pages = append(pages, resp)
	}
	return pages
}

// pagedRows is allPages, with the rows' amounts in the order given.
func pagedRows(t *testing.T, s CoprocessorRunner, req *coproc.Request) (amounts []int, pages []*coproc.Response) {
	t.Helper()
	pages = allPages(t, s, req)
	for _, p := range pages {
		for _, row := range p.Rows {
			amounts = append(amounts, amountOf(t, row))
		}
	}
	return amounts, pages
}

// amountOf is a row's "amount" column (setRows's i).
func amountOf(t *testing.T, row map[string]any) int {
	t.Helper()
	v, ok := row["amount"].(int64)
	require.True(t, ok, "amount is %T %v", row["amount"], row["amount"])
	return int(v)
}

// ints is [from, to) ascending, or descending from to-1 with desc.
func ints(from, to int, desc bool) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	if desc {
		slices.Reverse(s)
	}
	return s
}

// Every row comes once, in order, over two ranges and many page
// boundaries, in both directions; and a second range over the sequence
// runs the request anew.
func TestCoprocessorPages_EveryRowOnceInOrder(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true})
	setRows(t, db, 1000)
	for _, desc := range []bool{false, true} {
		req := &coproc.Request{
			Ranges:     []coproc.KeyRange{{Start: keyN(10), End: keyN(500)}, {Start: keyN(600)}},
			Columns:    []string{"amount"},
			PagingSize: 7,
			Desc:       desc,
		}
		before, err := coproc.Encode(req)
		require.NoError(t, err)
		want := append(ints(10, 500, false), ints(600, 1000, false)...)
		if desc {
			slices.Reverse(want)
		}
		s := &pagingStore{Store: db}
		got, pages := pagedRows(t, s, req)
		assert.Equal(t, want, got, "desc %v", desc)
		assert.GreaterOrEqual(t, len(pages), (len(want)+6)/7, "desc %v: at most 7 rows a page", desc)
		assert.Len(t, s.reqs, len(pages), "desc %v: one request a page", desc)
		for i, p := range pages {
			assert.LessOrEqual(t, len(p.Rows), 7, "desc %v page %d", desc, i)
			assert.Equal(t, i < len(pages)-1, p.ResumeKey != nil, "desc %v page %d: only the last has no ResumeKey", desc, i)
		}
		after, err := coproc.Encode(req)
		require.NoError(t, err)
		assert.Equal(t, before, after, "the caller's request is not changed")

		again, _ := pagedRows(t, db, req)
		assert.Equal(t, want, again, "desc %v: ranged again", desc)
	}
}

// The caller's Limit counts the rows of all pages: each page is sent with
// what is left, and the page that reaches it is the last — with a filter,
// so that pages return fewer rows than they scan.
func TestCoprocessorPages_LimitAcrossPages(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true})
	setRows(t, db, 200)
	atLeast5 := &coproc.Expr{Op: "ge", Args: []*coproc.Expr{{Op: "col", Col: "amount"}, {Op: "const", Value: 5}}}
	for _, tc := range []struct {
		name   string
		desc   bool
		want   []int
		limits []int
	}{
		// 5 and 6 pass the first page's filter, then 7 rows a page.
		{"ascending", false, ints(5, 30, false), []int{25, 23, 16, 9, 2}},
		{"descending", true, ints(75, 100, true), []int{25, 18, 11, 4}},
	} {
		s := &pagingStore{Store: db}
		got, _ := pagedRows(t, s, &coproc.Request{
			Ranges:     []coproc.KeyRange{{Start: keyN(0), End: keyN(100)}},
			Filter:     atLeast5,
			Columns:    []string{"amount"},
			Limit:      25,
			PagingSize: 7,
			Desc:       tc.desc,
		})
		assert.Equal(t, tc.want, got, tc.name)
		assert.Equal(t, tc.limits, s.limits(), tc.name)
	}
}

// A store whose page reaches the Limit but still resumes is sent nothing
// more: the rows given already make the Limit.
func TestCoprocessorPages_NoRequestPastTheLimit(t *testing.T) {
	calls := 0
	s := runnerFunc(func(_ context.Context, req *coproc.Request) (*coproc.Response, error) {
		calls++
		rows := make([]map[string]any, req.Limit)
		for i := range rows {
			rows[i] = map[string]any{"amount": int64(calls*10 + i)}
		}
		return &coproc.Response{Rows: rows, ResumeKey: []byte{byte('a' + calls)}}, nil
	})
	got, pages := pagedRows(t, s, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Limit: 3, PagingSize: 2})
	assert.Equal(t, []int{10, 11, 12}, got)
	assert.Len(t, pages, 1)
	assert.Equal(t, 1, calls)
}

// A consumer that stops ranging stops the paging: the page it broke on is
// the last request sent.
func TestCoprocessorPages_BreakSendsNoFurtherRequest(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true})
	setRows(t, db, 100)
	for _, stopAt := range []int{1, 2, 5} {
		s := &pagingStore{Store: db}
		pages := 0
		for resp, err := range CoprocessorPages(t.Context(), s, &coproc.Request{Ranges: []coproc.KeyRange{{}}, PagingSize: 10}) {
			require.NoError(t, err)
			require.NotNil(t, resp.ResumeKey, "the request has more pages than the test reads")
			if pages++; pages == stopAt {
				break
			}
		}
		assert.Equal(t, stopAt, pages)
		assert.Len(t, s.reqs, stopAt, "requests sent when the consumer broke after %d pages", stopAt)
	}
}

// The first error is given after the pages before it, and ends the
// sequence: nothing is sent after it.
func TestCoprocessorPages_ErrorEndsTheSequence(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true})
	setRows(t, db, 100)
	errStore := errors.New("store gone")
	s := &pagingStore{Store: db, failAt: 3, err: errStore}
	var rows, errs int
	for resp, err := range CoprocessorPages(t.Context(), s, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Columns: []string{"amount"}, PagingSize: 10}) {
		if err != nil {
			errs++
			assert.Nil(t, resp)
			assert.Same(t, errStore, err, "the store's error, as it is")
			continue
		}
		require.Zero(t, errs, "a page after the error")
		rows += len(resp.Rows)
	}
	assert.Equal(t, 20, rows, "the two pages before the error")
	assert.Equal(t, 1, errs)
	assert.Len(t, s.reqs, 3)

	// The store's own error: the context cancelled between pages.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []error
	for _, err := range CoprocessorPages(ctx, db, &coproc.Request{Ranges: []coproc.KeyRange{{}}, PagingSize: 10}) {
		got = append(got, err)
		cancel()
	}
	require.Len(t, got, 2)
	assert.NoError(t, got[0])
	assert.ErrorIs(t, got[1], context.Canceled)
}

// A request that does not page — aggregates, even with a PagingSize —
// gives one page.
func TestCoprocessorPages_AggregatesAreOnePage(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true})
	setRows(t, db, 100)
	s := &pagingStore{Store: db}
	pages := allPages(t, s, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count", As: "n"}}, PagingSize: 7})
	require.Len(t, pages, 1)
	require.Len(t, pages[0].Rows, 1)
	assert.EqualValues(t, 100, pages[0].Rows[0]["n"])
	assert.Len(t, s.reqs, 1)
}

// The pages of a Snapshot all read its one view: rows written between
// pages are not among them.
func TestCoprocessorPages_SnapshotPagesReadOneView(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true})
	setRows(t, db, 50)
	snap, err := db.NewSnapshot(t.Context())
	require.NoError(t, err)
	defer snap.Close()
	var got []int
	for resp, err := range CoprocessorPages(t.Context(), snap, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Columns: []string{"amount"}, PagingSize: 10}) {
		require.NoError(t, err)
		for _, row := range resp.Rows {
			got = append(got, amountOf(t, row))
		}
		setRows(t, db, 100) // rows 50 to 99, after the snapshot
	}
	assert.Equal(t, ints(0, 50, false), got)
}

// A store that resumes at the key it already gave would be sent the same
// page for ever: that is an error.
func TestCoprocessorPages_NoProgressIsAnError(t *testing.T) {
	calls := 0
	s := runnerFunc(func(context.Context, *coproc.Request) (*coproc.Response, error) {
		calls++
		return &coproc.Response{Rows: []map[string]any{{"amount": int64(1)}}, ResumeKey: []byte("k")}, nil
	})
	var pages int
	var last error
	for resp, err := range CoprocessorPages(t.Context(), s, &coproc.Request{Ranges: []coproc.KeyRange{{}}, PagingSize: 1}) {
		if err != nil {
			assert.Nil(t, resp)
			last = err
			continue
		}
		pages++
	}
	assert.Equal(t, 1, pages)
	assert.Equal(t, 2, calls)
	require.Error(t, last)
	assert.Contains(t, last.Error(), `page 2 resumes at "k" again`)
}

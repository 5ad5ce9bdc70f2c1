package coproctest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coopkv/coopkv/coproc"
)

// Stats counts what Check compared.
type Stats struct {
	Scans, TopN, Aggregates int // requests by shape
	Paged, Pages            int // requests that paged, and their pages
	Raw                     int // requests sent encoded (Run's Target.Raw)
	Overflows               int // requests that failed with coproc.ErrOverflow, as expected
	Rows                    int // rows and groups compared
}

func (s Stats) String() string {
	return fmt.Sprintf("%d row scans, %d top-N, %d aggregates, %d paged (%d pages), %d raw, %d overflow errors, %d rows compared",
		s.Scans, s.TopN, s.Aggregates, s.Paged, s.Pages, s.Raw, s.Overflows, s.Rows)
}

// Check runs req through run — page after page (Request.ResumeFrom) when
// it pages — and compares the answer with Reference(req, rows), which
// must be ascending by key; it reports whether they agree, having failed
// t, naming what (the seed, the request), if they do not. Besides the
// rows it checks that each page scans at most PagingSize rows and
// returns at most Limit, that RowsReturned counts the rows, that an
// unpaged request has no ResumeKey, and that one which must read every
// row in its ranges says it scanned them. st, if not nil, counts the
// request.
func Check(t testing.TB, what string, run func(*coproc.Request) (*coproc.Response, error), req *coproc.Request, rows []Row, st *Stats) bool {
	t.Helper()
	if st == nil {
		st = new(Stats)
	}
	what += ": " + Describe(req)
	want := Reference(req, rows)

	paged := req.PagingSize > 0 && len(req.Aggs) == 0 && len(req.GroupBy) == 0 && len(req.OrderBy) == 0
	var got []map[string]any
	if paged {
		st.Paged++
		r := req
		for pages := 1; ; pages++ {
			if !assert.LessOrEqual(t, pages, want.Scanned/req.PagingSize+2, "%s: too many pages", what) {
				return false
			}
			st.Pages++
			resp, err := run(r)
			if !assert.NoError(t, err, what) {
				return false
			}
			if !assert.LessOrEqual(t, resp.Stats.RowsScanned, int64(req.PagingSize), "%s: page %d scanned more than PagingSize", what, pages) ||
				!assert.EqualValues(t, len(resp.Rows), resp.Stats.RowsReturned, what) {
				return false
			}
			if req.Limit > 0 && !assert.LessOrEqual(t, len(resp.Rows), req.Limit, "%s: page %d passes Limit", what, pages) {
				return false
			}
			got = append(got, resp.Rows...)
			if resp.ResumeKey == nil {
				break
			}
			r = r.ResumeFrom(resp.ResumeKey)
		}
		// ResumeFrom keeps the Limit: each page may return up to Limit
		// rows, so the client stops reading at Limit.
		if req.Limit > 0 && len(got) > req.Limit {
			got = got[:req.Limit]
		}
	} else {
		resp, err := run(req)
		if want.Overflow {
			st.Overflows++
			return assert.ErrorIs(t, err, coproc.ErrOverflow, "%s: the exact sum leaves int64", what)
		}
		if !assert.NoError(t, err, what) {
			return false
		}
		if !assert.Nil(t, resp.ResumeKey, "%s: a request that does not page returned a ResumeKey", what) ||
			!assert.EqualValues(t, len(resp.Rows), resp.Stats.RowsReturned, what) {
			return false
		}
		if req.Limit == 0 || len(req.OrderBy) > 0 || want.Aggregate {
			if !assert.EqualValues(t, want.Scanned, resp.Stats.RowsScanned, "%s: RowsScanned", what) {
				return false
			}
		}
		got = resp.Rows
	}
	st.Rows += len(got)
	switch {
	case want.Aggregate:
		st.Aggregates++
		return compareGroups(t, what, req, want.Rows, got)
	case len(req.OrderBy) > 0:
		st.TopN++
	default:
		st.Scans++
	}
	if !assert.Len(t, got, len(want.Rows), "%s: rows", what) {
		logDiff(t, want.Rows, got)
		return false
	}
	for i := range got {
		if !RowEqual(want.Rows[i], got[i]) {
			assert.Fail(t, "rows differ", "%s: row %d: want %s, got %s", what, i, RowString(want.Rows[i]), RowString(got[i]))
			logDiff(t, want.Rows, got)
			return false
		}
	}
	return true
}

// compareGroups compares aggregate rows as a multiset, matched by their
// group columns; with OrderBy the order columns must also come in the same
// order (ties in first-seen order); with Limit and no order, the groups
// returned must be Limit of the groups.
func compareGroups(t testing.TB, what string, req *coproc.Request, want, got []map[string]any) bool {
	t.Helper()
	byGroup := map[string]map[string]any{}
	for _, w := range want {
		byGroup[groupKey(req.GroupBy, func(c string) any { return w[c] })] = w
	}
	if len(req.OrderBy) > 0 || req.Limit == 0 {
		if !assert.Len(t, got, len(want), "%s: groups", what) {
			logDiff(t, want, got)
			return false
		}
	} else if !assert.Len(t, got, min(req.Limit, len(byGroup)), "%s: groups under Limit", what) {
		return false
	}
	seen := map[string]bool{}
	for i, g := range got {
		k := groupKey(req.GroupBy, func(c string) any { return g[c] })
		w, ok := byGroup[k]
		if !assert.True(t, ok, "%s: unexpected group %s", what, RowString(g)) ||
			!assert.False(t, seen[k], "%s: group %s twice", what, RowString(g)) {
			logDiff(t, want, got)
			return false
		}
		seen[k] = true
		if !RowEqual(w, g) {
			assert.Fail(t, "groups differ", "%s: want %s, got %s", what, RowString(w), RowString(g))
			return false
		}
		if len(req.OrderBy) > 0 {
			for _, o := range req.OrderBy {
				if !ValueEqual(want[i][o.Col], g[o.Col]) {
					assert.Fail(t, "top-N order differs", "%s: row %d: want %s, got %s", what, i, RowString(want[i]), RowString(g))
					logDiff(t, want, got)
					return false
				}
			}
		}
	}
	return true
}

// logDiff logs the first rows of want and got side by side.
func logDiff(t testing.TB, want, got []map[string]any) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		if i >= 20 {
			t.Logf("…")
			return
		}
		var w, g string
		if i < len(want) {
			w = RowString(want[i])
		}
		if i < len(got) {
			g = RowString(got[i])
		}
		t.Logf("%3d want %s\n    got  %s", i, w, g)
	}
}

package coproctest

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// failures is a testing.TB whose failures are counted, not reported.
type failures struct {
	testing.TB
	n int
}

func (f *failures) Errorf(string, ...any) { f.n++ }
func (f *failures) Logf(string, ...any)   {}
func (f *failures) Helper()               {}

// TestCheck_CatchesWrongAnswers runs row scans (no float to hold within a
// tolerance) against a coprocessor that answers with Reference itself,
// and against the same one made wrong in one way each: Check passes the
// first and fails every other.
func TestCheck_CatchesWrongAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d, err := NewDataset(rng)
	require.NoError(t, err)
	req := &coproc.Request{Ranges: []coproc.KeyRange{{Start: Key(10), End: Key(d.span / 2)}}, Columns: []string{coproc.KeyColumn, "a", "c"}}
	require.Greater(t, Reference(req, d.Rows).Scanned, 2)
	answer := func(r *coproc.Request) *coproc.Response {
		ans := Reference(r, d.Rows)
		return &coproc.Response{Rows: ans.Rows, Stats: coproc.Stats{RowsScanned: int64(ans.Scanned), RowsReturned: int64(len(ans.Rows))}}
	}
	for _, c := range []struct {
		name  string
		wrong func(resp *coproc.Response)
	}{
		{"right", func(*coproc.Response) {}},
		{"a row missing", func(resp *coproc.Response) { resp.Rows = resp.Rows[1:]; resp.Stats.RowsReturned-- }},
		{"rows out of order", func(resp *coproc.Response) { slices.Reverse(resp.Rows) }},
		{"a value changed", func(resp *coproc.Response) { resp.Rows[0]["a"] = "not a" }},
		{"a column too many", func(resp *coproc.Response) { resp.Rows[0]["zz"] = 1 }},
		{"bytes for a string", func(resp *coproc.Response) { resp.Rows[0]["c"] = []byte("r1"); resp.Rows[1]["c"] = []byte("r1") }},
		{"a ResumeKey unasked", func(resp *coproc.Response) { resp.ResumeKey = Key(20) }},
		{"RowsReturned wrong", func(resp *coproc.Response) { resp.Stats.RowsReturned++ }},
		{"RowsScanned wrong", func(resp *coproc.Response) { resp.Stats.RowsScanned-- }},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := func(r *coproc.Request) (*coproc.Response, error) {
				resp := answer(r)
				c.wrong(resp)
				return resp, nil
			}
			f := &failures{TB: t}
			var st Stats
			ok := Check(f, c.name, run, req, d.Rows, &st)
			if c.name == "right" {
				assert.True(t, ok)
				assert.Zero(t, f.n)
				assert.Equal(t, 1, st.Scans)
				return
			}
			assert.False(t, ok, "Check passed a wrong answer")
			assert.Positive(t, f.n, "and failed the test")
		})
	}
}

// TestNewDataset_Replays: the same seed draws the same dataset and
// requests.
func TestNewDataset_Replays(t *testing.T) {
	draw := func() (*Dataset, []string) {
		rng := rand.New(rand.NewPCG(7, 0))
		d, err := NewDataset(rng)
		require.NoError(t, err)
		var reqs []string
		for range 50 {
			reqs = append(reqs, Describe(d.Request(rng)))
		}
		return d, reqs
	}
	d1, r1 := draw()
	d2, r2 := draw()
	assert.Equal(t, d1.Rows, d2.Rows)
	assert.Equal(t, r1, r2)
	assert.True(t, slices.IsSortedFunc(d1.Rows, func(a, b Row) int { return bytes.Compare(a.Key, b.Key) }), "ascending keys")
}

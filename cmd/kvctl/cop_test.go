package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// rowStore is a store of 100 rows k00000..k00099 {"region": "r<i%3>",
// "amount": i}.
func rowStore(t *testing.T) string {
	t.Helper()
	return newStore(t, func(db *kv.DB) {
		for i := range 100 {
			row, err := coproc.EncodeRow(map[string]any{"region": fmt.Sprintf("r%d", i%3), "amount": i})
			require.NoError(t, err)
			require.NoError(t, db.Set(key(i), row))
		}
	})
}

// writeFile writes s to a file in a temporary directory and returns its
// path.
func writeFile(t *testing.T, name, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
	return p
}

func TestCop(t *testing.T) {
	dir := rowStore(t)
	req := writeFile(t, "req.json", `{
		"ranges": [{"start": "k00010", "end": "k00020"}],
		"filter": {"op": "ge", "args": [{"op": "col", "col": "amount"}, {"op": "const", "value": 15}]},
		"columns": ["_key", "amount"]
	}`)
	r := kvctl(t, "cop", "--request", req, "--dir", dir)
	rows := decodeLines[map[string]any](t, r.ok(t))
	require.Len(t, rows, 5)
	for i, row := range rows {
		assert.Equal(t, map[string]any{"_key": string(key(15 + i)), "amount": float64(15 + i)}, row)
	}
	assert.Contains(t, r.stderr, "5 rows returned, 10 scanned")

	// --json: the rows only; --hex: bytes as hex.
	r = kvctl(t, "cop", "--request", req, "--dir", dir, "--json", "--hex")
	rows = decodeLines[map[string]any](t, r.ok(t))
	require.Len(t, rows, 5)
	assert.Equal(t, "0x6b3030303135", rows[0]["_key"])
	assert.Empty(t, r.stderr)
}

func TestCop_AggregateFromStdin(t *testing.T) {
	dir := rowStore(t)
	root := newRootCmd(new(bytes.Buffer), io.Discard)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetIn(strings.NewReader(`{"ranges": [{}], "group_by": ["region"], "aggs": [{"func": "count", "as": "n"}, {"func": "sum", "col": "amount", "as": "total"}], "order_by": [{"col": "region"}], "limit": 10}`))
	root.SetArgs([]string{"cop", "--request", "-", "--dir", dir, "--json"})
	require.NoError(t, root.ExecuteContext(t.Context()))
	rows := decodeLines[map[string]any](t, out.String())
	require.Len(t, rows, 3)
	sums := [3]float64{}
	for i := range 100 {
		sums[i%3] += float64(i)
	}
	for i, row := range rows {
		assert.Equal(t, fmt.Sprintf("r%d", i), row["region"])
		assert.EqualValues(t, []float64{34, 33, 33}[i], row["n"])
		assert.Equal(t, sums[i], row["total"])
	}
}

// A paged request is followed to its end; its limit counts over all pages.
func TestCop_FollowsPages(t *testing.T) {
	dir := rowStore(t)
	for _, tc := range []struct {
		req  string
		want []int
	}{
		{`{"ranges": [{"start": "k00010", "end": "k00030"}], "columns": ["amount"], "paging_size": 3}`, seq(10, 30)},
		{`{"ranges": [{"start": "k00010", "end": "k00030"}], "columns": ["amount"], "paging_size": 3, "limit": 7}`, seq(10, 17)},
		{`{"ranges": [{"start": "k00010", "end": "k00030"}], "columns": ["amount"], "paging_size": 4, "desc": true, "limit": 5}`, []int{29, 28, 27, 26, 25}},
	} {
		r := kvctl(t, "cop", "--request", writeFile(t, "req.json", tc.req), "--dir", dir)
		var got []int
		for _, row := range decodeLines[map[string]float64](t, r.ok(t)) {
			got = append(got, int(row["amount"]))
		}
		assert.Equal(t, tc.want, got, tc.req)
		assert.Contains(t, r.stderr, "page(s)")
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func TestCop_BadRequests(t *testing.T) {
	dir := rowStore(t)
	for _, tc := range []struct{ req, want string }{
		{`{"ranges": [{}], "nosuch": 1}`, "--request"},
		{`not json`, "malformed"},
		{`{"ranges": [{"start": "b", "end": "a"}]}`, "invalid range"},
		{`{"ranges": [{}], "order_by": [{"col": "x"}]}`, "kv: coprocessor"},
	} {
		r := kvctl(t, "cop", "--request", writeFile(t, "req.json", tc.req), "--dir", dir)
		assert.Equal(t, 1, r.code, tc.req)
		assert.Contains(t, r.stderr, tc.want, tc.req)
	}
	r := kvctl(t, "cop", "--request", filepath.Join(t.TempDir(), "missing.json"), "--dir", dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "no such file")
}

func TestJSONValue(t *testing.T) {
	in := map[string]any{
		"b":    []byte{0, 1},
		"t":    []byte("text"),
		"nan":  math.NaN(),
		"inf":  math.Inf(-1),
		"f":    1.5,
		"list": []any{[]byte{0xff}, int64(3), map[string]any{"x": []byte("y")}},
	}
	assert.Equal(t, map[string]any{
		"b": "0x0001", "t": "text", "nan": "NaN", "inf": "-Inf", "f": 1.5,
		"list": []any{"0xff", int64(3), map[string]any{"x": "y"}},
	}, jsonValue(in, false))
	assert.Equal(t, "0x74657874", jsonValue([]byte("text"), true))
}

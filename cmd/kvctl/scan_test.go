package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

func TestScan(t *testing.T) {
	dir := newStore(t, func(db *kv.DB) {
		for i := range 20 {
			require.NoError(t, db.Set(key(i), fmt.Appendf(nil, "v%d", i)))
		}
		require.NoError(t, db.Set([]byte{0xff, 0}, []byte{1, 2}))
	})
	keys := func(args ...string) []string {
		t.Helper()
		var ks []string
		for _, p := range decodeLines[pair](t, kvctl(t, append([]string{"scan", "--dir", dir, "--json"}, args...)...).ok(t)) {
			ks = append(ks, p.Key)
		}
		return ks
	}
	ks := func(is ...int) []string {
		var s []string
		for _, i := range is {
			s = append(s, string(key(i)))
		}
		return s
	}

	all := keys()
	require.Len(t, all, 21)
	assert.Equal(t, "0xff00", all[20], "a binary key prints as hex")
	assert.Equal(t, ks(0, 1, 2, 3, 4), keys("--limit", "5"))
	assert.Equal(t, ks(5, 6, 7, 8, 9), keys("--start", "k00005", "--end", "k00010"))
	assert.Equal(t, ks(18, 19), keys("--start", "k00018", "--end", "k00020"))
	assert.Equal(t, ks(5, 6), keys("--start", "k00005", "--end", "k00010", "--limit", "2"))
	assert.Equal(t, ks(9, 8, 7), keys("--start", "k00005", "--end", "k00010", "--reverse", "--limit", "3"))
	assert.Equal(t, []string{"0xff00", string(key(19))}, keys("--reverse", "--limit", "2"))
	assert.Equal(t, ks(3, 2, 1, 0), keys("--end", "k00004", "--reverse"))
	assert.Empty(t, keys("--start", "x", "--end", "y"))
	// --hex reads the bounds as hex and prints every key as hex.
	assert.Equal(t, []string{"0x6b3030303138", "0x6b3030303139"}, keys("--hex", "--start", "6b3030303138", "--end", "ff"))
	assert.Equal(t, []string{"0xff00"}, keys("--hex", "--start", "0xff"))
	// --prefix: every key that starts with it.
	assert.Equal(t, ks(10, 11, 12, 13, 14, 15, 16, 17, 18, 19), keys("--prefix", "k0001"))
	assert.Equal(t, ks(19, 18), keys("--prefix", "k0001", "--reverse", "--limit", "2"))
	assert.Equal(t, []string{"0xff00"}, keys("--hex", "--prefix", "ff"))
	assert.Len(t, keys("--prefix", ""), 21, "an empty prefix is every key")
	assert.Empty(t, keys("--prefix", "k1"))
	r := kvctl(t, "scan", "--dir", dir, "--prefix", "k", "--start", "k00005")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "without --start and --end")

	// Text: key TAB value, a line each.
	out := kvctl(t, "scan", "--dir", dir, "--start", "k00018").ok(t)
	assert.Equal(t, "k00018\tv18\nk00019\tv19\n0xff00\t0x0102\n", out)
	out = kvctl(t, "scan", "--dir", dir, "--start", "k00019", "--keys-only").ok(t)
	assert.Equal(t, "k00019\n0xff00\n", out)
	lines := decodeLines[map[string]any](t, kvctl(t, "scan", "--dir", dir, "--limit", "1", "--keys-only", "--json").ok(t))
	assert.Equal(t, []map[string]any{{"key": "k00000"}}, lines)

	pairs := decodeLines[pair](t, kvctl(t, "scan", "--dir", dir, "--limit", "1", "--json").ok(t))
	assert.Equal(t, []pair{{Key: "k00000", Value: "v0"}}, pairs)

	r = kvctl(t, "scan", "--dir", dir, "--start", "b", "--end", "a")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "invalid range")
}

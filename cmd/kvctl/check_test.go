package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// flushedStore is a store of n keys flushed to tables and one more,
// "wal-only", that is only in the WAL.
func flushedStore(t *testing.T, n int) string {
	t.Helper()
	return newStore(t, func(db *kv.DB) {
		for i := range n {
			row, err := coproc.EncodeRow(map[string]any{"i": i})
			require.NoError(t, err)
			require.NoError(t, db.Set(key(i), row))
		}
		require.NoError(t, db.Flush())
		row, err := coproc.EncodeRow(map[string]any{"wal": true})
		require.NoError(t, err)
		require.NoError(t, db.Set([]byte("wal-only"), row))
	})
}

func TestCheck_GoodStore(t *testing.T) {
	dir := flushedStore(t, 2000)
	rep := decode[checkReport](t, kvctl(t, "check", "--dir", dir, "--json").ok(t))
	assert.True(t, rep.OK)
	assert.EqualValues(t, 2001, rep.Points)
	assert.Positive(t, rep.Tables)
	assert.Empty(t, rep.TableError)
	assert.Nil(t, rep.Rows)

	out := kvctl(t, "check", "--dir", dir).ok(t)
	assert.Contains(t, out, "tables ok: 2001 points, 0 tombstones")

	rep = decode[checkReport](t, kvctl(t, "check", "--dir", dir, "--rows", "", "", "--json").ok(t))
	require.NotNil(t, rep.Rows)
	assert.EqualValues(t, 2001, rep.Rows.Checked)
	assert.Empty(t, rep.Rows.Corrupt)
}

func TestCheck_RowsNamesEachCorruptKey(t *testing.T) {
	dir := flushedStore(t, 100)
	db, err := kv.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, db.Set(key(50), []byte("not a row")))
	require.NoError(t, db.Set([]byte{0xff, 1}, []byte{0x81}))         // a map missing its entry
	require.NoError(t, db.Set(key(70), []byte("\x81\xa1a\x01extra"))) // trailing bytes
	require.NoError(t, db.Close())

	r := kvctl(t, "check", "--dir", dir, "--rows", "", "", "--json")
	assert.Equal(t, 1, r.code)
	rep := decode[checkReport](t, r.stdout)
	assert.False(t, rep.OK)
	assert.Empty(t, rep.TableError, "the tables are fine")
	require.NotNil(t, rep.Rows)
	var keys []string
	for _, c := range rep.Rows.Corrupt {
		keys = append(keys, c.Key)
		assert.Contains(t, c.Error, "decode row")
	}
	assert.Equal(t, []string{string(key(50)), string(key(70)), "0xff01"}, keys)
	assert.EqualValues(t, 102, rep.Rows.Checked) // 100 rows, wal-only and 0xff01
	for _, k := range keys {
		assert.Contains(t, r.stderr, `"`+k+`"`)
	}
	assert.Contains(t, r.stderr, "kvctl: check failed: 3 value(s) in [-inf, +inf) are not rows")

	// Text: each corrupt key on a line of its own.
	r = kvctl(t, "check", "--dir", dir, "--rows", "k00040", "k00060")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, `corrupt row "k00050": coproc: decode row`)
	assert.NotContains(t, r.stdout, "k00070")
	assert.Contains(t, r.stderr, `1 value(s) in ["k00040", "k00060") are not rows: "k00050"`)

	// A range without them is fine.
	out := kvctl(t, "check", "--dir", dir, "--rows", "k00000", "k00050").ok(t)
	assert.Contains(t, out, `rows ok: 50 values in ["k00000", "k00050") decode as rows`)
}

func TestCheck_CorruptTable(t *testing.T) {
	dir := flushedStore(t, 5000)
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	b, err := os.ReadFile(tables[0])
	require.NoError(t, err)
	b[len(b)/3] ^= 0xff // inside a data block
	require.NoError(t, os.WriteFile(tables[0], b, 0o644))

	r := kvctl(t, "check", "--dir", dir, "--json")
	assert.Equal(t, 1, r.code)
	rep := decode[checkReport](t, r.stdout)
	assert.False(t, rep.OK)
	assert.Contains(t, rep.TableError, "checksum")
	assert.Contains(t, rep.TableError, "corrupt data", "kv.ErrCorrupt")
	assert.Contains(t, r.stderr, "kvctl: check failed: ")
	assert.Contains(t, r.stderr, "checksum")

	r = kvctl(t, "check", "--dir", dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "corrupt: ")

	// The error keeps the store's behind kvctl's words. (Pebble marks
	// corruption with cockroachdb/errors, which errors.Is cannot see.)
	root := newRootCmd(io.Discard, io.Discard)
	root.SetArgs([]string{"check", "--dir", dir})
	err = root.ExecuteContext(t.Context())
	assert.ErrorIs(t, err, errCheckFailed)
	var pe interface{ Unwrap() []error }
	require.ErrorAs(t, err, &pe)
	assert.Len(t, pe.Unwrap(), 2, "errCheckFailed and Check's error")
	assert.ErrorContains(t, pe.Unwrap()[1], "kv: check: ")
}

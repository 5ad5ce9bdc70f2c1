package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

func TestCheckpoint_CopyOpensWithTheStoresKeys(t *testing.T) {
	dir := flushedStore(t, 500)
	to := filepath.Join(t.TempDir(), "backup")
	got := decode[checkpointed](t, kvctl(t, "checkpoint", "--dir", dir, "--to", to, "--json").ok(t))
	assert.Equal(t, checkpointed{Dir: dir, To: to}, got)

	cp, err := kv.Open(to, &kv.Options{ReadOnly: true})
	require.NoError(t, err)
	for _, k := range [][]byte{key(0), key(499), []byte("wal-only")} {
		_, err := cp.Get(t.Context(), k)
		assert.NoError(t, err, "%s in the copy", k)
	}
	require.NoError(t, cp.Close())
	rep := decode[checkReport](t, kvctl(t, "check", "--dir", to, "--json").ok(t))
	assert.True(t, rep.OK)
	assert.EqualValues(t, 501, rep.Points)

	// The source is untouched and still opens; an existing --to is refused.
	r := kvctl(t, "checkpoint", "--dir", dir, "--to", to)
	assert.NotZero(t, r.code)
	assert.Contains(t, r.stderr, to)
	assert.Contains(t, r.stderr, "exists")
	out := kvctl(t, "checkpoint", "--dir", dir, "--to", filepath.Join(t.TempDir(), "again")).ok(t)
	assert.Contains(t, out, "checkpoint of "+dir+" written to ")

	r = kvctl(t, "checkpoint", "--dir", dir)
	assert.NotZero(t, r.code)
	assert.Contains(t, r.stderr, `"to" not set`)
}

package kv

import (
	"context"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpen_NewStoreAtNewestFormat(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, pebble.FormatNewest, db.pdb.FormatMajorVersion())
	require.NoError(t, db.Close())
}

func TestOpen_OlderFormatStoreStillOpens(t *testing.T) {
	dir := t.TempDir()
	old := pebble.FormatMinSupported
	require.Less(t, old, pebble.FormatNewest, "the test needs a format older than the newest")
	pdb, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: old, Logger: pebbleLogger{slog.New(slog.DiscardHandler)}})
	require.NoError(t, err)
	require.NoError(t, pdb.Set([]byte("k"), []byte("v"), pebble.Sync))
	require.NoError(t, pdb.Flush())
	require.NoError(t, pdb.Set([]byte("wal"), []byte("only in the WAL"), pebble.Sync))
	require.NoError(t, pdb.Close())

	db := openTest(t, dir, nil)
	assert.Equal(t, old, db.pdb.FormatMajorVersion(), "Open does not raise an existing store's format")
	for k, want := range map[string]string{"k": "v", "wal": "only in the WAL"} {
		v, err := db.Get(context.Background(), []byte(k))
		require.NoError(t, err)
		assert.Equal(t, want, string(v))
	}
	require.NoError(t, db.Set([]byte("new"), []byte("x")))
}

package kv

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillFlushed writes n keys into a store at dir, flushes them to tables,
// writes a few more that stay in the WAL only, and closes it.
func fillFlushed(t *testing.T, dir string, n int) {
	t.Helper()
	db := openTest(t, dir, &Options{})
	for i := range n {
		require.NoError(t, db.Set(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "v%05d", i)))
	}
	require.NoError(t, db.pdb.Flush())
	require.NoError(t, db.Set([]byte("wal-only"), []byte("x")))
	require.NoError(t, db.Close())
}

// digest maps each file under dir to the hash of its contents, its mode
// and its modification time.
func digest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%x %v", sha256.Sum256(b), fi.Mode())
		if d.Name() != "LOCK" { // Pebble re-creates it, empty, to lock it
			out[p] += fmt.Sprint(" ", fi.ModTime().UnixNano())
		}
		return nil
	}))
	return out
}

func TestReadOnly_ReadsAndLeavesFilesAlone(t *testing.T) {
	dir := t.TempDir()
	fillFlushed(t, dir, 2000)
	before := digest(t, dir)

	db, err := Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err)
	v, err := db.Get(context.Background(), []byte("k00042"))
	require.NoError(t, err)
	assert.Equal(t, "v00042", string(v))
	v, err = db.Get(context.Background(), []byte("wal-only"))
	require.NoError(t, err, "a read-only open must replay the WAL")
	assert.Equal(t, "x", string(v))
	n := 0
	for range db.Scan(context.Background(), nil, nil, nil).All() {
		n++
	}
	assert.Equal(t, 2001, n)
	rep, err := db.Check(context.Background())
	require.NoError(t, err)
	assert.Positive(t, rep.Tables)
	assert.EqualValues(t, 2001, rep.Points)

	assert.ErrorIs(t, db.Set([]byte("a"), []byte("b")), ErrReadOnly)
	assert.ErrorIs(t, db.Delete([]byte("a")), ErrReadOnly)
	b := db.NewBatch()
	b.Set([]byte("a"), []byte("b"))
	assert.ErrorIs(t, db.Apply(b), ErrReadOnly)
	require.NoError(t, db.Close())

	assert.Equal(t, before, digest(t, dir), "a read-only open, reads and Check changed the store's files")
}

func TestReadOnly_MissingStoreIsAnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nothing")
	_, err := Open(dir, &Options{ReadOnly: true})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no store there")
	_, statErr := os.Stat(dir)
	assert.ErrorIs(t, statErr, os.ErrNotExist, "a read-only open must not create the store")
}

func TestOpen_LockedStoreFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{})
	for _, ro := range []bool{false, true} {
		_, err := Open(dir, &Options{ReadOnly: ro})
		require.Error(t, err, "read-only %v", ro)
		assert.ErrorIs(t, err, ErrLocked, "read-only %v", ro)
		assert.Contains(t, err.Error(), dir)
	}
	require.NoError(t, db.Close())
	db2, err := Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err, "the lock must be released by Close")
	require.NoError(t, db2.Close())
}

func TestCheck_FindsACorruptTable(t *testing.T) {
	dir := t.TempDir()
	fillFlushed(t, dir, 5000)
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, tables)
	b, err := os.ReadFile(tables[0])
	require.NoError(t, err)
	b[len(b)/3] ^= 0xff // inside a data block
	require.NoError(t, os.WriteFile(tables[0], b, 0o644))

	db, err := Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err)
	_, err = db.Check(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checksum", "the error should say what is wrong: %v", err)
	require.NoError(t, db.Close())
	_, err = db.Check(context.Background())
	assert.ErrorIs(t, err, ErrClosed)
}

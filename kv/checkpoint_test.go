package kv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckpoint_CopyOpensWithEveryAcknowledgedWrite(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, filepath.Join(dir, "db"), &Options{NoSync: true})
	load(t, db, 1000, func(i int) []byte { return keyN(i) })
	require.NoError(t, db.Flush())
	// Acknowledged but, under NoSync, not yet in the WAL's file.
	require.NoError(t, db.Set([]byte("late"), []byte("write")))
	require.NoError(t, db.DeleteRange(keyN(10), keyN(20)))

	to := filepath.Join(dir, "copy")
	require.NoError(t, db.Checkpoint(to))
	require.NoError(t, db.Set([]byte("after"), []byte("the checkpoint")))

	cp, err := Open(to, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cp.Close()) }()
	ctx := context.Background()
	v, err := cp.Get(ctx, []byte("late"))
	require.NoError(t, err)
	assert.Equal(t, "write", string(v))
	_, err = cp.Get(ctx, []byte("after"))
	assert.ErrorIs(t, err, ErrNotFound, "a write after the checkpoint")
	_, err = cp.Get(ctx, keyN(15))
	assert.ErrorIs(t, err, ErrNotFound, "the range deleted before it")
	assert.Len(t, scanKeys(t, cp, keyN(0), PrefixEnd([]byte("key"))), 990)

	err = db.Checkpoint(to)
	assert.ErrorIs(t, err, os.ErrExist, "the directory exists")
	assert.ErrorContains(t, err, to)

	require.NoError(t, db.Checkpoint(filepath.Join(dir, "ro-src")))
	ro := openTest(t, filepath.Join(dir, "ro-src"), &Options{ReadOnly: true})
	assert.ErrorIs(t, ro.Checkpoint(filepath.Join(dir, "ro")), ErrReadOnly)
	require.NoError(t, ro.Close())

	mem := openTest(t, "", &Options{InMemory: true})
	assert.ErrorContains(t, mem.Checkpoint(filepath.Join(dir, "mem")), "in-memory")

	require.NoError(t, db.Close())
	assert.ErrorIs(t, db.Checkpoint(filepath.Join(dir, "closed")), ErrClosed)
}

// A checkpoint taken while transfers run holds whole batches only: its
// accounts sum to the total.
func TestCheckpoint_DuringTransfers(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, filepath.Join(dir, "db"), &Options{NoSync: true})
	moved, going, stop := startTransfers(t, db, 7, 200)
	defer stop()
	<-going
	require.False(t, t.Failed(), "a transfer failed before 200 were made")
	var copies []string
	for i := range 3 {
		to := filepath.Join(dir, "copy", string(rune('a'+i)))
		require.NoError(t, db.Checkpoint(to))
		copies = append(copies, to)
	}
	stop()

	for _, to := range copies {
		cp, err := Open(to, &Options{ReadOnly: true})
		require.NoError(t, err)
		vals, err := cp.MultiGet(context.Background(), bankKeys())
		require.NoError(t, err)
		var sum int64
		for i, v := range vals {
			bal, err := bankBalance(v)
			require.NoError(t, err, "account %d in %s", i, to)
			sum += bal
		}
		assert.Equal(t, int64(bankTotal), sum, "the accounts of %s", to)
		require.NoError(t, cp.Close())
	}
	t.Logf("%d transfers ran beside %d checkpoints", moved.Load(), len(copies))
}

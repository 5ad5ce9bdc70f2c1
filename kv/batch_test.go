package kv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBatch_ResetClearsWritesAndEmptyKeyError(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, "", &Options{InMemory: true})
	b := db.NewBatch()
	b.Set([]byte("a"), []byte("1"))
	b.Set(nil, []byte("x"))
	require.ErrorIs(t, db.Apply(b), ErrEmptyKey)
	require.ErrorIs(t, db.Apply(b), ErrEmptyKey, "sticky until Reset")
	_, err := db.Get(ctx, []byte("a"))
	require.ErrorIs(t, err, ErrNotFound, "a failed batch writes nothing")

	b.Reset()
	assert.Zero(t, b.Len())
	require.NoError(t, db.Apply(b), "an empty batch applies")
	b.Set([]byte("b"), []byte("2"))
	b.Delete([]byte("c"))
	require.NoError(t, db.Apply(b))
	v, err := db.Get(ctx, []byte("b"))
	require.NoError(t, err)
	assert.Equal(t, "2", string(v))
	_, err = db.Get(ctx, []byte("a"))
	assert.ErrorIs(t, err, ErrNotFound, "Reset dropped the write of a")

	// Apply leaves the batch as it was: applying it again rewrites b.
	require.NoError(t, db.Set([]byte("b"), []byte("changed")))
	require.NoError(t, db.Apply(b))
	v, err = db.Get(ctx, []byte("b"))
	require.NoError(t, err)
	assert.Equal(t, "2", string(v))
}

func TestApply_AfterCloseIsErrClosed(t *testing.T) {
	db, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	bad := db.NewBatch()
	bad.Set(nil, nil)
	full := db.NewBatch()
	full.Set([]byte("k"), nil)
	for name, b := range map[string]*Batch{"empty": db.NewBatch(), "empty key": bad, "writes": full, "nil": nil} {
		assert.ErrorIs(t, db.Apply(b), ErrClosed, name)
	}
}

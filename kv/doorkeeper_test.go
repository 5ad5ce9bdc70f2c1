package kv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoorkeeper_AdmitsASecondMiss(t *testing.T) {
	d := newDoorkeeper(10)
	assert.False(t, d.admit(1), "a key's first miss is held back")
	assert.True(t, d.admit(1), "its second is let through")
	assert.True(t, d.admit(1), "and every one after, until the bits clear")
	assert.False(t, d.admit(2), "another key waits for its own second miss")
	assert.True(t, d.admit(2))
	assert.False(t, d.admit(3+d.mask+1), "hashes are taken modulo the bits")
	assert.True(t, d.admit(3), "… so a hash that shares a bit passes: a false pass")
}

func TestDoorkeeper_Sizing(t *testing.T) {
	assert.Equal(t, uint64(1<<12-1), newDoorkeeper(0).mask, "at least 4,096 bits")
	assert.Equal(t, uint64(1<<20-1), newDoorkeeper(100_000).mask, "eight bits an entry, a power of two")
	assert.Equal(t, int64(1<<20/8), newDoorkeeper(100_000).bytes())
}

func TestDoorkeeper_ClearsAfterAnEighthOfItsBitsFirstMissed(t *testing.T) {
	d := newDoorkeeper(0) // 4,096 bits, cleared after 512 first misses
	require.Equal(t, int64(512), d.limit)
	assert.False(t, d.admit(0))
	for h := uint64(1); h < 511; h++ {
		require.False(t, d.admit(h))
	}
	assert.True(t, d.admit(0), "seen, the bits not cleared yet: 511 first misses")
	assert.False(t, d.admit(511), "the 512th first miss clears the bits")
	assert.False(t, d.admit(0), "so key 0 waits again")
	assert.False(t, d.admit(511), "and so does the key whose miss cleared them")
	assert.True(t, d.admit(511))
}

// TestRowCache_AKeyIsCachedFromItsSecondMiss: a key read, not written, since
// the store opened is cached at its second miss; one written is cached at
// its first read.
func TestRowCache_AKeyIsCachedFromItsSecondMiss(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{NoSync: true})
	require.NoError(t, db.Set([]byte("old"), []byte("v")))
	require.NoError(t, db.Close())

	db = openTest(t, dir, &Options{NoSync: true})
	ctx := context.Background()
	get := func(key string) {
		t.Helper()
		_, err := db.Get(ctx, []byte(key))
		require.NoError(t, err)
		db.cache.c.Wait() // ristretto applies inserts asynchronously
	}
	cached := func(key string) bool {
		_, _, ok, _ := db.cache.lookup([]byte(key))
		return ok
	}
	get("old")
	assert.False(t, cached("old"), "its first miss is held back")
	assert.EqualValues(t, 1, db.Stats().RowCache.HeldBack)
	get("old")
	assert.True(t, cached("old"), "its second is cached")

	require.NoError(t, db.Set([]byte("new"), []byte("v")))
	get("new")
	assert.True(t, cached("new"), "a write counts as the first miss")
	assert.EqualValues(t, 1, db.Stats().RowCache.HeldBack)
}

package kv

import (
	"context"
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoorkeeper_SecondTouchAdmits(t *testing.T) {
	var d doorkeeper
	d.init(1 << 12)
	seed := maphash.MakeSeed()
	h := maphash.String(seed, "k")
	assert.False(t, d.touch(h), "a first miss")
	assert.True(t, d.touch(h), "a second one")
	assert.True(t, d.touch(h))
}

func TestDoorkeeper_ForgetsAfterItsWindow(t *testing.T) {
	var d doorkeeper
	d.init(1 << 12)
	seed := maphash.MakeSeed()
	old := maphash.String(seed, "old")
	require.False(t, d.touch(old))
	// An eighth of the bits set by other keys clears the map.
	for i := 0; d.set.Load() != 0 || i == 0; i++ {
		d.touch(maphash.String(seed, fmt.Sprint(i)))
	}
	assert.False(t, d.touch(old), "touched before the window: a first miss again")
}

func TestRowCache_AdmitsOnTheSecondMiss(t *testing.T) {
	rc, err := newRowCache(1 << 20)
	require.NoError(t, err)
	defer rc.close()
	key, val := []byte("k"), []byte("v")
	_, ok, gen := rc.get(key)
	require.False(t, ok)
	assert.False(t, rc.admit(key, val, gen), "first miss: not cached")
	assert.EqualValues(t, 1, rc.firstTouches.Load())
	_, ok, gen = rc.get(key)
	require.False(t, ok)
	assert.True(t, rc.admit(key, val, gen), "second miss: cached")
	rc.c.Wait()
	got, ok, _ := rc.get(key)
	require.True(t, ok)
	assert.Equal(t, val, got)
}

func TestGet_RowCacheFillsOnASecondRead(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, Workers: 1})
	require.NoError(t, db.Set([]byte("k"), []byte("v")))
	ctx := context.Background()
	for range 2 {
		v, err := db.Get(ctx, []byte("k"))
		require.NoError(t, err)
		assert.Equal(t, "v", string(v))
	}
	db.cache.c.Wait()
	s := db.Stats().RowCache
	assert.EqualValues(t, 2, s.Misses)
	assert.EqualValues(t, 1, s.FirstTouches)
	_, err := db.Get(ctx, []byte("k"))
	require.NoError(t, err)
	assert.EqualValues(t, 1, db.Stats().RowCache.Hits)
}

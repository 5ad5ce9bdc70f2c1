package kv

import (
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTest opens a store that the test closes, asserting Close returns nil
// (Pebble reports leaked iterators there).
func openTest(t testing.TB, dir string, opts *Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// inBubble runs f in a synctest bubble, for a test that waits for a state
// of the read pool that nothing signals — a worker parked, a task queued
// or waiting: synctest.Wait returns once every goroutine of a store opened
// in f is blocked. The store must be in memory (Pebble's goroutines then
// block on channels, conditions and timers only).
//
// Package-wide sync.Pools must hold nothing from outside the bubble when
// it starts, nor anything from it when it ends: Get's pooled tasks carry a
// channel, and Pebble's pooled batches WaitGroups, bound to where they
// were made. A wait inside on one made outside does not count as blocked
// (synctest.Wait would wait for ever), and one made inside kills a test
// outside that uses it. Two collections empty every pool (the first moves
// a pool's items to its victim cache, the second drops them).
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	emptyPools := func() { runtime.GC(); runtime.GC() }
	emptyPools()
	synctest.Test(t, f)
	emptyPools()
}

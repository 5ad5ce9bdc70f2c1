package kv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sweepWatch opens a store on dir (in memory when "") with a fake clock and
// a channel that hears of every sweep's end.
func sweepWatch(t *testing.T, dir string, clock *fakeClock, hooks *sweepHooks) (*DB, chan struct{}) {
	t.Helper()
	passes := make(chan struct{}, 100)
	hooks.passEnded = func() { passes <- struct{}{} }
	db := openTest(t, dir, &Options{InMemory: dir == "", Clock: clock.now, sweepHooks: hooks})
	require.NotNil(t, db.sweep)
	return db, passes
}

// waitPass waits for the next sweep's end.
func waitPass(t *testing.T, passes chan struct{}) {
	t.Helper()
	select {
	case <-passes:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no sweep")
	}
}

// sweepNow makes the sweeper look at its due time now (a test's clock has
// moved on), and waits for the pass that follows.
func sweepNow(t *testing.T, db *DB, passes chan struct{}) {
	t.Helper()
	db.sweep.kick <- struct{}{}
	waitPass(t, passes)
}

// inPebble reports whether Pebble holds key, expired or not.
func inPebble(t *testing.T, db *DB, key []byte) bool {
	t.Helper()
	_, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	require.NoError(t, closer.Close())
	return true
}

// Expired keys are deleted in the background — in the memtable and in
// tables alike — and keys without a TTL, or not yet expired, are not.
func TestSweep_DeletesExpiredKeys(t *testing.T) {
	clock := newFakeClock()
	db, passes := sweepWatch(t, "", clock, &sweepHooks{})
	const n = 1000
	for i := range n {
		require.NoError(t, db.SetWithTTL(keyN(i), []byte("session"), time.Second))
		require.NoError(t, db.Set(fmt.Appendf(nil, "plain%05d", i), []byte("v")))
		if i == n/2 {
			require.NoError(t, db.Flush()) // half in a table
		}
	}
	require.NoError(t, db.SetWithTTL([]byte("later"), []byte("v"), time.Hour))
	clock.advance(time.Second)
	sweepNow(t, db, passes)
	st := db.Stats().Sweep
	assert.True(t, st.Enabled)
	assert.EqualValues(t, n, st.Expired)
	assert.EqualValues(t, n, st.Swept)
	assert.Zero(t, st.Beaten)
	for i := range n {
		require.False(t, inPebble(t, db, keyN(i)), "key %d swept", i)
		require.True(t, inPebble(t, db, fmt.Appendf(nil, "plain%05d", i)))
	}
	assert.True(t, inPebble(t, db, []byte("later")), "not expired yet")

	// A pass with nothing expired deletes nothing.
	require.NoError(t, db.Flush())
	clock.advance(time.Minute)
	sweepNow(t, db, passes)
	assert.EqualValues(t, n, db.Stats().Sweep.Swept)
}

// A key a write reaches between its finding and its deletion is not
// deleted: the deletion reads it again.
func TestSweep_AWriteFirstWins(t *testing.T) {
	clock := newFakeClock()
	var db *DB
	hooks := &sweepHooks{}
	hooks.beforeDelete = func(keys [][]byte) {
		require.NoError(t, db.Set(keys[0], []byte("live again")))
	}
	db, passes := sweepWatch(t, "", clock, hooks)
	require.NoError(t, db.SetWithTTL([]byte("k"), []byte("v"), time.Second))
	clock.advance(time.Second)
	sweepNow(t, db, passes)
	v, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "live again", string(v))
	st := db.Stats().Sweep
	assert.EqualValues(t, 1, st.Beaten)
	assert.Zero(t, st.Swept)
}

// A key whose TTL a plain Set cleared is never swept, though the table
// that holds its old value says that value has expired.
func TestSweep_ANewerPlainValueLives(t *testing.T) {
	clock := newFakeClock()
	db, passes := sweepWatch(t, "", clock, &sweepHooks{})
	require.NoError(t, db.SetWithTTL([]byte("k"), []byte("old"), time.Second))
	require.NoError(t, db.Flush())
	require.NoError(t, db.pdb.Compact(context.Background(), []byte("a"), []byte("z"), true)) // the old value to the last level
	require.NoError(t, db.Set([]byte("k"), []byte("new")))
	require.NoError(t, db.Flush()) // the new one in a table of its own, which carries no expiry
	clock.advance(time.Hour)
	sweepNow(t, db, passes)
	v, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(v))
	assert.Zero(t, db.Stats().Sweep.Expired)
}

// A store closed with expired keys sweeps them after it reopens.
func TestSweep_AfterReopen(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	db, err := Open(dir, &Options{Clock: clock.now})
	require.NoError(t, err)
	for i := range 100 {
		require.NoError(t, db.SetWithTTL(keyN(i), []byte("v"), time.Minute))
	}
	require.NoError(t, db.Close())
	clock.advance(time.Minute)
	db, passes := sweepWatch(t, dir, clock, &sweepHooks{})
	waitPass(t, passes) // the pass Open starts, as the store has held keys with a TTL
	assert.EqualValues(t, 100, db.Stats().Sweep.Swept)
	for i := range 100 {
		require.False(t, inPebble(t, db, keyN(i)))
	}
}

// Close stops the sweeper in the middle of a pass, and no goroutine of it
// outlives Close (TestMain's leak check).
func TestSweep_StopsAtClose(t *testing.T) {
	clock := newFakeClock()
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	hooks := &sweepHooks{beforeDelete: func([][]byte) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
	}}
	db, err := Open("", &Options{InMemory: true, Clock: clock.now, sweepHooks: hooks})
	require.NoError(t, err)
	for i := range 1000 {
		require.NoError(t, db.SetWithTTL(keyN(i), []byte("v"), time.Second))
	}
	clock.advance(time.Second)
	db.sweep.kick <- struct{}{}
	<-entered // a batch is about to be deleted
	closed := make(chan error)
	go func() { closed <- db.Close() }()
	close(release)
	require.NoError(t, <-closed)
	assert.Less(t, db.Stats().Sweep.Swept, int64(1000), "the pass stopped")
}

// A store whose keys cannot expire runs no sweeper.
func TestSweep_NoneWithoutTTLs(t *testing.T) {
	dir := t.TempDir()
	pdb, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest})
	require.NoError(t, err)
	require.NoError(t, pdb.Close())
	db := openTest(t, dir, nil)
	assert.Nil(t, db.sweep)
	assert.False(t, db.Stats().Sweep.Enabled)
}

// A batch's search yields to a Get queued behind it at its next look at
// the pool (every 64 keys), and the pass goes on after the Get.
func TestSweep_YieldsToAGet(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		clock := newFakeClock()
		hold, entered, release := holdFirst()
		looked := -1 // keys read at the search's last look
		passes := make(chan struct{}, 10)
		hooks := &sweepHooks{
			beforeLook: func(read int) { looked = read; hold() },
			passEnded:  func() { passes <- struct{}{} },
		}
		db := openTest(t, "", &Options{InMemory: true, Clock: clock.now, Workers: 1, spares: -1, TimeSlice: time.Hour, NoWarm: true, sweepHooks: hooks})
		for i := range 1000 {
			require.NoError(t, db.SetWithTTL(keyN(i), []byte("v"), time.Hour))
		}
		clock.advance(time.Hour)
		db.sweep.kick <- struct{}{}
		<-entered // the search's first look, before any key, holds the only worker
		atGet := -2
		db.hooks.beforeRead = func([]byte) { atGet = looked }
		require.ErrorIs(t, getBesideWarmer(db, "no such key", release), ErrNotFound)
		assert.Equal(t, 64, atGet, "the search yielded at its next look, 64 keys on")
		<-passes
		assert.EqualValues(t, 1000, db.Stats().Sweep.Swept, "and the pass went on")
	})
}

// A pass that found many of the keys it read expired (a store of
// sessions) is followed a second later; one that found few waits 20 times
// its length, so that a large store without TTLs costs little to sweep.
func TestSweepGap(t *testing.T) {
	assert.Equal(t, sweepEvery, sweepGap(3*time.Second, 1000, 100), "a tenth expired")
	assert.Equal(t, 60*time.Second, sweepGap(3*time.Second, 1000, 99))
	assert.Equal(t, sweepEvery, sweepGap(time.Millisecond, 1000, 0), "a short pass")
	assert.Equal(t, sweepEvery, sweepGap(time.Millisecond, 0, 0))
}

// A checkpoint of a store that has held keys with a TTL sweeps the expired
// ones at its Open, as the store would.
func TestSweep_CheckpointSweepsAtOpen(t *testing.T) {
	clock := newFakeClock()
	db := openTest(t, t.TempDir(), &Options{Clock: clock.now})
	for i := range 50 {
		require.NoError(t, db.SetWithTTL(keyN(i), []byte("v"), time.Minute))
	}
	dir := t.TempDir() + "/copy"
	require.NoError(t, db.Checkpoint(dir))
	clock.advance(time.Minute)
	cp, passes := sweepWatch(t, dir, clock, &sweepHooks{})
	waitPass(t, passes)
	assert.EqualValues(t, 50, cp.Stats().Sweep.Swept)
}

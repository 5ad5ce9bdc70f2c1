package kv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The embedded store's transactions: what kvtest checks on every Store is
// in kv/kvtest; here is what only the embedded store promises (phantoms,
// plain writes and range deletions as conflicts, a scan's extent) and its
// oracle's own behaviour.

func openTxnTest(t *testing.T, o *Options) *DB {
	if o == nil {
		o = &Options{}
	}
	o.InMemory = true
	return openTest(t, t.Name(), o)
}

func mustTxn(t *testing.T, db *DB) *Txn {
	t.Helper()
	tx, err := db.NewTxn(context.Background())
	require.NoError(t, err)
	t.Cleanup(tx.Rollback)
	return tx
}

// iterKeys reads it to its end and returns its keys.
func iterKeys(t *testing.T, it *Iterator) []string {
	t.Helper()
	var keys []string
	for it.Next() {
		keys = append(keys, string(it.Key()))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return keys
}

// TestTxn_PlainWritesConflict: every kind of plain write of a key a Txn
// read, made after it began, fails its commit — and writes nothing.
func TestTxn_PlainWritesConflict(t *testing.T) {
	ctx := context.Background()
	writes := map[string]func(db *DB) error{
		"Set":    func(db *DB) error { return db.Set([]byte("k"), []byte("2")) },
		"Delete": func(db *DB) error { return db.Delete([]byte("k")) },
		"Apply": func(db *DB) error {
			b := db.NewBatch()
			b.Set([]byte("other"), nil)
			b.Set([]byte("k"), []byte("2"))
			return db.Apply(b)
		},
		"Write": func(db *DB) error {
			b := db.NewBatch()
			b.Delete([]byte("k"))
			return db.Write(ctx, b)
		},
		"DeleteRange":        func(db *DB) error { return db.DeleteRange([]byte("a"), []byte("z")) },
		"DeleteRangeOpenEnd": func(db *DB) error { return db.DeleteRange([]byte("j"), nil) },
		"Txn": func(db *DB) error {
			return Update(ctx, db, func(tx *Txn) error { return tx.Set([]byte("k"), []byte("2")) })
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			db := openTxnTest(t, nil)
			require.NoError(t, db.Set([]byte("k"), []byte("1")))
			tx := mustTxn(t, db)
			v, err := tx.Get(ctx, []byte("k"))
			require.NoError(t, err)
			require.Equal(t, "1", string(v))
			require.NoError(t, tx.Set([]byte("out"), []byte("x")))

			require.NoError(t, write(db))
			assert.ErrorIs(t, tx.Commit(ctx), ErrConflict)
			_, err = db.Get(ctx, []byte("out"))
			assert.ErrorIs(t, err, ErrNotFound, "a conflicting commit writes nothing")
		})
	}
}

// TestTxn_UnrelatedWritesDoNotConflict: a write outside what a Txn read —
// beside a read key, past a scan's Limit — lets it commit.
func TestTxn_UnrelatedWritesDoNotConflict(t *testing.T) {
	ctx := context.Background()
	db := openTxnTest(t, nil)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		require.NoError(t, db.Set([]byte(k), []byte("v")))
	}
	tx := mustTxn(t, db)
	_, err := tx.Get(ctx, []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "c"}, iterKeys(t, tx.Scan(ctx, []byte("b"), nil, &ScanOptions{Limit: 2})))
	assert.Equal(t, []string{"e"}, iterKeys(t, tx.Scan(ctx, []byte("d"), nil, &ScanOptions{Limit: 1, Reverse: true})))
	require.NoError(t, tx.Set([]byte("a"), []byte("mine")))

	require.NoError(t, db.Set([]byte("aa"), []byte("beside a")))
	require.NoError(t, db.Set([]byte("cc"), []byte("past the Limit")))
	require.NoError(t, db.Delete([]byte("d")), "below the reverse scan's last key")
	require.NoError(t, tx.Commit(ctx))
	v, err := db.Get(ctx, []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(v))
}

// TestTxn_Phantom: a key inserted into a range a Txn scanned, even one the
// scan found empty, is a conflict on the embedded store.
func TestTxn_Phantom(t *testing.T) {
	ctx := context.Background()
	db := openTxnTest(t, nil)
	require.NoError(t, db.Set([]byte("user/1"), []byte("ann")))
	tx := mustTxn(t, db)
	assert.Equal(t, []string{"user/1"}, iterKeys(t, tx.Scan(ctx, []byte("user/"), PrefixEnd([]byte("user/")), nil)))
	require.NoError(t, tx.Set([]byte("count"), []byte("1")))
	require.NoError(t, db.Set([]byte("user/2"), []byte("bob")))
	assert.ErrorIs(t, tx.Commit(ctx), ErrConflict)

	tx = mustTxn(t, db)
	assert.Empty(t, iterKeys(t, tx.Scan(ctx, []byte("x/"), []byte("x0"), nil)))
	require.NoError(t, tx.Set([]byte("claimed"), []byte("x")))
	require.NoError(t, db.Set([]byte("x/1"), nil))
	assert.ErrorIs(t, tx.Commit(ctx), ErrConflict, "an empty range read is still a read")
}

// TestTxn_ClosedEarlyScanReadsWhatItSaw: a scan closed after its first row
// reads up to that row only.
func TestTxn_ClosedEarlyScanReadsWhatItSaw(t *testing.T) {
	ctx := context.Background()
	db := openTxnTest(t, nil)
	for _, k := range []string{"a", "b", "c"} {
		require.NoError(t, db.Set([]byte(k), []byte("v")))
	}
	tx := mustTxn(t, db)
	it := tx.Scan(ctx, nil, nil, nil)
	require.True(t, it.Next())
	require.Equal(t, "a", string(it.Key()))
	require.NoError(t, it.Close())
	require.NoError(t, tx.Set([]byte("z"), nil))
	require.NoError(t, db.Set([]byte("b"), []byte("after")))
	assert.NoError(t, tx.Commit(ctx), "b was never returned to the Txn")

	tx = mustTxn(t, db)
	it = tx.Scan(ctx, nil, nil, nil)
	require.True(t, it.Next())
	require.NoError(t, it.Close())
	require.NoError(t, tx.Set([]byte("z"), nil))
	require.NoError(t, db.Set([]byte("a"), []byte("after")))
	assert.ErrorIs(t, tx.Commit(ctx), ErrConflict, "a was")
}

// TestTxn_ScanMergesOwnWrites: a Txn's scan shows its own sets and hides
// its own deletions, in both orders and within a Limit.
func TestTxn_ScanMergesOwnWrites(t *testing.T) {
	ctx := context.Background()
	db := openTxnTest(t, nil)
	for _, k := range []string{"b", "d", "f"} {
		require.NoError(t, db.Set([]byte(k), []byte("old")))
	}
	tx := mustTxn(t, db)
	require.NoError(t, tx.Set([]byte("a"), []byte("new")))
	require.NoError(t, tx.Set([]byte("d"), []byte("new")))
	require.NoError(t, tx.Delete([]byte("b")))
	require.NoError(t, tx.Set([]byte("e"), []byte("new")))
	require.NoError(t, db.Set([]byte("c"), []byte("later")), "after the Txn began: not seen")

	it := tx.Scan(ctx, nil, nil, nil)
	var got []string
	for it.Next() {
		got = append(got, string(it.Key())+"="+string(it.Value()))
	}
	require.NoError(t, it.Err())
	assert.Equal(t, []string{"a=new", "d=new", "e=new", "f=old"}, got)
	assert.Equal(t, []string{"f", "e", "d"}, iterKeys(t, tx.Scan(ctx, nil, nil, &ScanOptions{Reverse: true, Limit: 3})))
	assert.Equal(t, []string{"d", "e"}, iterKeys(t, tx.Scan(ctx, []byte("b"), []byte("f"), &ScanOptions{KeysOnly: true})))
	it = tx.Scan(ctx, []byte("z"), []byte("a"), nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), ErrInvalidRange)
	it = tx.Scan(ctx, nil, nil, &ScanOptions{Limit: -1})
	assert.False(t, it.Next())
	assert.Error(t, it.Err())
}

// TestTxn_TooLarge: MaxTxnBytes bounds the buffered writes; an overwrite
// counts its new size only, and a refused write leaves the Txn usable.
func TestTxn_TooLarge(t *testing.T) {
	ctx := context.Background()
	db := openTxnTest(t, &Options{MaxTxnBytes: 100})
	tx := mustTxn(t, db)
	require.NoError(t, tx.Set([]byte("k"), make([]byte, 90)))
	require.NoError(t, tx.Set([]byte("k"), make([]byte, 99)), "an overwrite replaces the old size")
	assert.ErrorIs(t, tx.Set([]byte("j"), []byte("x")), ErrTxnTooLarge)
	require.NoError(t, tx.Delete([]byte("k")))
	require.NoError(t, tx.Set([]byte("j"), []byte("x")))
	require.NoError(t, tx.Commit(ctx))
	v, err := db.Get(ctx, []byte("j"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(v))

	_, err = Open("", &Options{InMemory: true, MaxTxnBytes: -1})
	assert.ErrorContains(t, err, "MaxTxnBytes")
}

// TestTxn_Closed: a Txn open at Close fails its reads and commit with
// ErrClosed; NewTxn after Close too; Rollback is still fine.
func TestTxn_Closed(t *testing.T) {
	ctx := context.Background()
	db, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	tx, err := db.NewTxn(ctx)
	require.NoError(t, err)
	require.NoError(t, tx.Set([]byte("k"), nil))
	require.NoError(t, db.Close())
	_, err = tx.Get(ctx, []byte("x"))
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, tx.Commit(ctx), ErrClosed)
	tx.Rollback()
	_, err = db.NewTxn(ctx)
	assert.ErrorIs(t, err, ErrClosed)
}

// TestTxn_ReadOnlyStore: a Txn reads a read-only store; a write commits
// ErrReadOnly.
func TestTxn_ReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v")))
	require.NoError(t, db.Close())
	db = openTest(t, dir, &Options{ReadOnly: true})
	tx := mustTxn(t, db)
	v, err := tx.Get(ctx, []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "v", string(v))
	require.NoError(t, tx.Set([]byte("k"), nil))
	assert.ErrorIs(t, tx.Commit(ctx), ErrReadOnly)
}

// TestTxn_LostUpdateUnderPlainWrites: counters bumped through Update while
// plain Sets of other keys and DeleteRanges of empty ranges run beside
// them lose no increment — on every scheduler, with and without sync.
func TestTxn_LostUpdateUnderPlainWrites(t *testing.T) {
	for _, sched := range []Scheduler{SchedulerMLFQ, SchedulerDirect, SchedulerPriority} {
		t.Run(string(sched), func(t *testing.T) {
			ctx := context.Background()
			db := openTxnTest(t, &Options{Scheduler: sched, NoSync: sched == SchedulerDirect})
			const workers, each = 4, 25
			var commits atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			wg.Add(1)
			go func() { // plain writes beside, on and off
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					assert.NoError(t, db.Set(fmt.Appendf(nil, "plain/%d", i%10), []byte("x")))
					if i%20 == 0 { // each leaves a tombstone that reads step over
						assert.NoError(t, db.DeleteRange([]byte("void/"), []byte("void0")))
					}
					time.Sleep(20 * time.Microsecond)
				}
			}()
			var bumps sync.WaitGroup
			for w := range workers {
				bumps.Add(1)
				go func() {
					defer bumps.Done()
					for range each {
						err := Update(ctx, db, func(tx *Txn) error {
							n := 0
							v, err := tx.Get(ctx, []byte("counter"))
							if err == nil {
								_, err = fmt.Sscan(string(v), &n)
							}
							if err != nil && !errors.Is(err, ErrNotFound) {
								return err
							}
							return tx.Set([]byte("counter"), fmt.Appendf(nil, "%d", n+1))
						})
						// Ten conflicts in a row can happen under this
						// contention; they write nothing, so count only
						// the commits.
						if err != nil {
							assert.ErrorIs(t, err, ErrConflict, "worker %d", w)
							continue
						}
						commits.Add(1)
					}
				}()
			}
			bumps.Wait()
			close(stop)
			wg.Wait()
			v, err := db.Get(ctx, []byte("counter"))
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprint(commits.Load()), string(v), "every committed increment, none lost")
			assert.Positive(t, commits.Load())
		})
	}
}

// TestStopRecording: writes go on recording for recordingLinger after the
// last transaction, and stop only with none open.
func TestStopRecording(t *testing.T) {
	t0 := time.Unix(100, 0)
	assert.False(t, stopRecording(true, t0, t0.Add(time.Hour)), "a transaction is open")
	assert.False(t, stopRecording(false, t0, t0.Add(recordingLinger-1)))
	assert.True(t, stopRecording(false, t0, t0.Add(recordingLinger)))
}

// TestOracle_RecordingTurnsOffAndOn: after the linger a write turns
// recording off, and the next Txn turns it on again and still sees
// conflicts with the writes after it.
func TestOracle_RecordingTurnsOffAndOn(t *testing.T) {
	ctx := context.Background()
	db := openTxnTest(t, nil)
	require.False(t, db.oracle.recording.Load(), "no transaction yet: writes go straight to Pebble")
	tx := mustTxn(t, db)
	assert.True(t, db.oracle.recording.Load())
	tx.Rollback()
	db.oracle.mu.Lock()
	db.oracle.idleSince = time.Now().Add(-recordingLinger)
	db.oracle.mu.Unlock()
	require.NoError(t, db.Set([]byte("k"), []byte("1")))
	assert.False(t, db.oracle.recording.Load(), "off once the linger has passed")

	tx = mustTxn(t, db)
	require.True(t, db.oracle.recording.Load())
	_, err := tx.Get(ctx, []byte("k"))
	require.NoError(t, err)
	require.NoError(t, tx.Set([]byte("j"), nil))
	require.NoError(t, db.Set([]byte("k"), []byte("2")))
	assert.ErrorIs(t, tx.Commit(ctx), ErrConflict)
	db.oracle.mu.Lock()
	assert.Empty(t, db.oracle.log.commits, "no transaction open: no record kept")
	db.oracle.mu.Unlock()
}

// TestTxn_ReadsAreReadPoolTasks: a Txn's reads wait in the pool like any
// other — behind a held worker they end at their deadline, and a full
// pool refuses them with ErrBusy — and the Txn goes on afterwards.
func TestTxn_ReadsAreReadPoolTasks(t *testing.T) {
	busy, _ := openSaturated(t, Options{MaxTasks: 1})
	ctx := context.Background()
	tx := mustTxn(t, busy)
	// The held Get may run inline (no place of MaxTasks) or on the worker
	// (the one place): a queued scan fills the place in the first case
	// and is refused in the second.
	filler := busy.Scan(ctx, nil, nil, nil)
	t.Cleanup(func() { _ = filler.Close() })
	_, err := tx.Get(ctx, []byte("k"))
	assert.ErrorIs(t, err, ErrBusy)
	_, err = tx.MultiGet(ctx, keysOf("a", "b"))
	assert.ErrorIs(t, err, ErrBusy)
	it := tx.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), ErrBusy)
	require.NoError(t, it.Close())
	tx.Rollback()

	db, release := openSaturated(t, Options{})
	tx = mustTxn(t, db)
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = tx.Get(short, []byte("k"))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "queued behind the held worker")

	release()
	_, err = tx.Get(ctx, []byte("k"))
	assert.ErrorIs(t, err, ErrNotFound, "the worker is free again")
	require.NoError(t, tx.Set([]byte("k"), nil))
	assert.NoError(t, tx.Commit(ctx), "failed reads were not reads")
}

// TestTxn_ScanEndingOnItsOwnWriteReadsTheWholeRange: a Txn scan read to
// its end counts its whole range as read, also when its last rows are the
// Txn's own writes or deletions — the Close after must not narrow it to
// the last row returned (it did: a phantom past it went unseen).
func TestTxn_ScanEndingOnItsOwnWriteReadsTheWholeRange(t *testing.T) {
	ctx := context.Background()
	for _, own := range []string{"set", "delete"} {
		t.Run(own, func(t *testing.T) {
			db, err := Open("", &Options{InMemory: true})
			require.NoError(t, err)
			defer func() { assert.NoError(t, db.Close()) }()
			require.NoError(t, db.Set([]byte("b"), []byte("v")))
			tx, err := db.NewTxn(ctx)
			require.NoError(t, err)
			defer tx.Rollback()
			want := []string{"b"}
			if own == "set" {
				require.NoError(t, tx.Set([]byte("c"), []byte("mine")))
				want = append(want, "c")
			} else {
				require.NoError(t, tx.Delete([]byte("c")))
			}
			it := tx.Scan(ctx, []byte("a"), []byte("z"), nil)
			var got []string
			for it.Next() {
				got = append(got, string(it.Key()))
			}
			require.NoError(t, it.Err())
			require.NoError(t, it.Close())
			require.Equal(t, want, got, "read to its end")

			require.NoError(t, db.Set([]byte("x"), []byte("phantom")))
			assert.ErrorIs(t, tx.Commit(ctx), ErrConflict, "x is inside [a, z), which the scan read to its end")
		})
	}
}

// TestTxn_GetFromRowCache: a Txn's Get of a cached key nobody wrote since
// it began is a row-cache hit, served without a Pebble read; once the key
// is written after the Txn began — the cache then holds the new value —
// the Txn still reads the old one, from its snapshot.
func TestTxn_GetFromRowCache(t *testing.T) {
	ctx := context.Background()
	db := openTxnTest(t, nil)
	require.NoError(t, db.Set([]byte("k"), []byte("old")))
	_, err := db.Get(ctx, []byte("k"))
	require.NoError(t, err)
	db.cache.c.Wait() // ristretto puts through a buffer: cached now

	tx := mustTxn(t, db)
	hits := db.cache.hits.Load()
	v, err := tx.Get(ctx, []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(v))
	assert.Equal(t, hits+1, db.cache.hits.Load(), "served from the row cache")

	require.NoError(t, db.Set([]byte("k"), []byte("new")))
	v, err = db.Get(ctx, []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "new", string(v), "the cache holds the newest value")
	tx2 := mustTxn(t, db)
	v, err = tx.Get(ctx, []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "old", string(v), "as of the Txn's start, not the cache's")
	v, err = tx2.Get(ctx, []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(v))

	require.NoError(t, db.DeleteRange([]byte("a"), []byte("b")), "a range deletion elsewhere")
	hits = db.cache.hits.Load()
	v, err = tx2.Get(ctx, []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(v))
	assert.Equal(t, hits, db.cache.hits.Load(), "a range deletion since the start: no hit is trusted")
}

// TestTxn_GroupCommitChecksInOrder: two commits in one group, each having
// read the key the other writes, are checked in turn under the lock — the
// second sees the first's record — so exactly one commits, and the store
// holds its value.
func TestTxn_GroupCommitChecksInOrder(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		ctx := context.Background()
		db := openTxnTest(t, nil)
		require.NoError(t, db.Set([]byte("k"), []byte("0")))
		o := &db.oracle
		o.qmu.Lock()
		o.leading = true // both commits queue as followers; this test leads
		o.qmu.Unlock()
		type result struct {
			v   string
			err error
		}
		results := make(chan result, 2)
		for _, v := range []string{"1", "2"} {
			tx := mustTxn(t, db)
			_, err := tx.Get(ctx, []byte("k"))
			require.NoError(t, err)
			require.NoError(t, tx.Set([]byte("k"), []byte(v)))
			go func() { results <- result{v, tx.Commit(ctx)} }()
		}
		synctest.Wait() // both commits queued, waiting for the leader
		o.qmu.Lock()
		group := o.queue
		o.queue, o.leading = nil, false
		o.qmu.Unlock()
		require.Len(t, group, 2)
		o.commitGroup(group)
		var winner string
		var conflicts int
		for range 2 {
			switch r := <-results; {
			case r.err == nil:
				winner = r.v
			case errors.Is(r.err, ErrConflict):
				conflicts++
			default:
				t.Fatal(r.err)
			}
		}
		assert.Equal(t, 1, conflicts, "the second of the group saw the first's write")
		require.NotEmpty(t, winner, "one commits")
		v, err := db.Get(ctx, []byte("k"))
		require.NoError(t, err)
		assert.Equal(t, winner, string(v), "the store holds the committed value only")
	})
}

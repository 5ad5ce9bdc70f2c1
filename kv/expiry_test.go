package kv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// fakeClock is a store's Options.Clock that tests move on by hand.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// ttlRows are the keys TestTTL_* write: live with no TTL, short (expires
// after 1 s), long (after 1 h).
var ttlRows = []struct {
	key string
	ttl time.Duration
}{
	{"a-plain", 0}, {"b-short", time.Second}, {"c-long", time.Hour}, {"d-short", time.Second}, {"e-plain", 0},
}

func writeTTLRows(t *testing.T, db *DB) {
	t.Helper()
	for _, r := range ttlRows {
		row, err := coproc.EncodeRow(map[string]any{"k": r.key})
		require.NoError(t, err)
		if r.ttl == 0 {
			require.NoError(t, db.Set([]byte(r.key), row))
		} else {
			require.NoError(t, db.SetWithTTL([]byte(r.key), row, r.ttl))
		}
	}
}

// liveKeys checks every read of db's live state (or of s, when not nil)
// returns exactly the keys want of ttlRows.
func checkReads(t *testing.T, db *DB, s *Snapshot, want []string) {
	t.Helper()
	ctx := context.Background()
	type reader interface {
		Get(context.Context, []byte) ([]byte, error)
		MultiGet(context.Context, [][]byte) ([][]byte, error)
		Scan(context.Context, []byte, []byte, *ScanOptions) *Iterator
		Coprocessor(context.Context, *coproc.Request) (*coproc.Response, error)
		ExpiresAt(context.Context, []byte) (time.Time, error)
	}
	var r reader = db
	if s != nil {
		r = s
	}
	live := map[string]bool{}
	for _, k := range want {
		live[k] = true
	}
	var keys [][]byte
	for _, row := range ttlRows {
		keys = append(keys, []byte(row.key))
		_, err := r.Get(ctx, []byte(row.key))
		exp, eerr := r.ExpiresAt(ctx, []byte(row.key))
		if live[row.key] {
			assert.NoError(t, err, "Get %s", row.key)
			assert.NoError(t, eerr, "ExpiresAt %s", row.key)
			assert.Equal(t, row.ttl == 0, exp.IsZero(), "ExpiresAt %s: %v", row.key, exp)
		} else {
			assert.ErrorIs(t, err, ErrNotFound, "Get %s", row.key)
			assert.ErrorIs(t, eerr, ErrNotFound, "ExpiresAt %s", row.key)
		}
	}
	vals, err := r.MultiGet(ctx, keys)
	require.NoError(t, err)
	for i, row := range ttlRows {
		assert.Equal(t, live[row.key], vals[i] != nil, "MultiGet %s", row.key)
	}
	scan := func(opts *ScanOptions) []string {
		it := r.Scan(ctx, nil, nil, opts)
		var got []string
		for k, v := range it.All() {
			got = append(got, string(k))
			if opts == nil || !opts.KeysOnly {
				m, err := coproc.DecodeRow(v)
				require.NoError(t, err)
				assert.Equal(t, string(k), m["k"], "the value, without its tag")
			}
		}
		require.NoError(t, it.Err())
		require.NoError(t, it.Close())
		return got
	}
	assert.Equal(t, want, scan(nil), "Scan")
	assert.Equal(t, want, scan(&ScanOptions{KeysOnly: true}), "Scan KeysOnly")
	rev := scan(&ScanOptions{Reverse: true})
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	assert.Equal(t, want, rev, "Scan Reverse")
	if len(want) >= 2 {
		assert.Equal(t, want[:2], scan(&ScanOptions{Limit: 2}), "Scan Limit 2")
	}
	resp, err := r.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}})
	require.NoError(t, err)
	require.Len(t, resp.Rows, 1)
	assert.EqualValues(t, len(want), resp.Rows[0]["count(*)"], "Coprocessor count")
	resp, err = r.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Columns: []string{"k"}})
	require.NoError(t, err)
	var got []string
	for _, row := range resp.Rows {
		got = append(got, fmt.Sprint(row["k"]))
	}
	assert.Equal(t, want, got, "Coprocessor rows")
}

var (
	allTTLRows  = []string{"a-plain", "b-short", "c-long", "d-short", "e-plain"}
	afterSecond = []string{"a-plain", "c-long", "e-plain"}
)

// A key written with a TTL reads as missing from its expiry on, in every
// read, wherever Pebble holds it: the memtable, a flushed table, a
// compacted one; and through the row cache, which held it while it lived.
func TestTTL_ExpiredInEveryRead(t *testing.T) {
	for _, where := range []string{"memtable", "flushed", "compacted"} {
		t.Run(where, func(t *testing.T) {
			clock := newFakeClock()
			db := openTest(t, "", &Options{InMemory: true, Clock: clock.now})
			writeTTLRows(t, db)
			switch where {
			case "flushed":
				require.NoError(t, db.Flush())
			case "compacted":
				require.NoError(t, db.Flush())
				require.NoError(t, db.pdb.Compact(context.Background(), []byte("a"), []byte("z"), true))
			}
			checkReads(t, db, nil, allTTLRows) // fills the row cache too
			clock.advance(time.Second - 1)
			checkReads(t, db, nil, allTTLRows)
			clock.advance(1)
			checkReads(t, db, nil, afterSecond)
			clock.advance(time.Hour)
			checkReads(t, db, nil, []string{"a-plain", "e-plain"})
		})
	}
}

// The row cache serves a TTL'd key while it lives and never after.
func TestTTL_RowCacheCarriesTheExpiry(t *testing.T) {
	clock := newFakeClock()
	db := openTest(t, "", &Options{InMemory: true, Clock: clock.now, NoWarm: true})
	require.NotNil(t, db.cache)
	k := []byte("session")
	require.NoError(t, db.SetWithTTL(k, []byte("v"), time.Minute))
	ctx := context.Background()
	for range 3 { // the doorkeeper admits it on its second miss
		_, err := db.Get(ctx, k)
		require.NoError(t, err)
		db.cache.c.Wait() // ristretto sets asynchronously
	}
	val, exp, ok, _ := db.cache.lookup(k)
	require.True(t, ok, "cached")
	assert.Equal(t, "v", string(val))
	assert.Equal(t, clock.now().Add(time.Minute).UnixNano(), exp)
	hits := db.cache.hits.Load()
	_, err := db.Get(ctx, k)
	require.NoError(t, err)
	assert.Greater(t, db.cache.hits.Load(), hits, "served from the cache while it lives")
	clock.advance(time.Minute)
	_, err = db.Get(ctx, k)
	assert.ErrorIs(t, err, ErrNotFound, "the cached value has expired")
}

// A later Set clears the TTL; a later SetWithTTL replaces it; a TTL that
// is not positive is refused, and writes nothing.
func TestTTL_OverwritesAndInvalidTTLs(t *testing.T) {
	clock := newFakeClock()
	db := openTest(t, "", &Options{InMemory: true, Clock: clock.now})
	ctx := context.Background()
	k := []byte("k")
	require.NoError(t, db.SetWithTTL(k, []byte("1"), time.Second))
	require.NoError(t, db.Set(k, []byte("2")))
	clock.advance(time.Hour)
	v, err := db.Get(ctx, k)
	require.NoError(t, err, "a plain Set clears the TTL")
	assert.Equal(t, "2", string(v))
	exp, err := db.ExpiresAt(ctx, k)
	require.NoError(t, err)
	assert.True(t, exp.IsZero())

	require.NoError(t, db.SetWithTTL(k, []byte("3"), time.Second))
	require.NoError(t, db.SetWithTTL(k, []byte("4"), time.Minute))
	exp, err = db.ExpiresAt(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, clock.now().Add(time.Minute), exp, "the later TTL replaces the earlier")
	clock.advance(time.Second)
	v, err = db.Get(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, "4", string(v))

	for _, ttl := range []time.Duration{0, -time.Second} {
		assert.ErrorIs(t, db.SetWithTTL([]byte("bad"), []byte("v"), ttl), ErrInvalidTTL)
		b := db.NewBatch()
		b.Set([]byte("other"), []byte("v"))
		b.SetWithTTL([]byte("bad"), []byte("v"), ttl)
		assert.ErrorIs(t, db.Apply(b), ErrInvalidTTL)
	}
	assert.ErrorIs(t, db.SetWithTTL(nil, []byte("v"), time.Second), ErrEmptyKey)
	for _, k := range []string{"bad", "other"} {
		_, err = db.Get(ctx, []byte(k))
		assert.ErrorIs(t, err, ErrNotFound, "%s: a refused write writes nothing", k)
	}

	b := db.NewBatch()
	b.SetWithTTL([]byte("b1"), []byte("v"), time.Second)
	b.Set([]byte("b2"), []byte("v"))
	require.NoError(t, db.Apply(b))
	clock.advance(time.Second)
	_, err = db.Get(ctx, []byte("b1"))
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = db.Get(ctx, []byte("b2"))
	assert.NoError(t, err)

	require.NoError(t, db.Close())
	assert.ErrorIs(t, db.SetWithTTL(k, []byte("v"), time.Second), ErrClosed)
	_, err = db.ExpiresAt(ctx, k)
	assert.ErrorIs(t, err, ErrClosed)
}

// A snapshot judges expiry at its own time: what lived when it was taken
// lives in it for as long as it is open.
func TestTTL_SnapshotJudgesAtItsTime(t *testing.T) {
	clock := newFakeClock()
	db := openTest(t, "", &Options{InMemory: true, Clock: clock.now})
	writeTTLRows(t, db)
	s, err := db.NewSnapshot(context.Background())
	require.NoError(t, err)
	defer s.Close()
	clock.advance(2 * time.Second)
	checkReads(t, db, nil, afterSecond)
	checkReads(t, db, s, allTTLRows)
}

// A Txn reads as of its start; one that read a key which has expired by
// its Commit conflicts, as if the key had been written; one that read only
// keys that still live commits.
func TestTTL_TxnConflictsOnAnExpiryItRead(t *testing.T) {
	ctx := context.Background()
	for _, read := range []string{"get", "multiget", "scan", "expiresat"} {
		t.Run(read, func(t *testing.T) {
			clock := newFakeClock()
			db := openTest(t, "", &Options{InMemory: true, Clock: clock.now})
			writeTTLRows(t, db)
			tx, err := db.NewTxn(ctx)
			require.NoError(t, err)
			defer tx.Rollback()
			clock.advance(time.Second) // b-short and d-short expire now, after the Txn began
			k := []byte("b-short")
			switch read {
			case "get":
				_, err = tx.Get(ctx, k)
				require.NoError(t, err, "as of its start")
			case "multiget":
				vals, err := tx.MultiGet(ctx, [][]byte{k})
				require.NoError(t, err)
				require.NotNil(t, vals[0], "as of its start")
			case "scan":
				it := tx.Scan(ctx, []byte("b"), []byte("c"), nil)
				n := 0
				for range it.All() {
					n++
				}
				require.NoError(t, it.Close())
				require.Equal(t, 1, n, "as of its start")
			case "expiresat":
				exp, err := tx.ExpiresAt(ctx, k)
				require.NoError(t, err)
				assert.Equal(t, clock.now(), exp)
			}
			require.NoError(t, tx.Set([]byte("out"), []byte("v")))
			assert.ErrorIs(t, tx.Commit(ctx), ErrConflict)
			_, err = db.Get(ctx, []byte("out"))
			assert.ErrorIs(t, err, ErrNotFound, "the conflicted Txn wrote nothing")

			tx2, err := db.NewTxn(ctx)
			require.NoError(t, err)
			_, err = tx2.Get(ctx, []byte("c-long"))
			require.NoError(t, err)
			require.NoError(t, tx2.SetWithTTL([]byte("out"), []byte("v"), time.Minute))
			exp, err := tx2.ExpiresAt(ctx, []byte("out"))
			require.NoError(t, err)
			assert.Equal(t, clock.now().Add(time.Minute), exp, "its own write, as if committed now")
			require.NoError(t, tx2.Commit(ctx), "what it read still lives")
			clock.advance(time.Minute)
			_, err = db.Get(ctx, []byte("out"))
			assert.ErrorIs(t, err, ErrNotFound, "a Txn's write expires as DB's do")
		})
	}
}

// A new store's values are tagged, and it says so to whoever opens it
// again: kv reopens it tagged, and Pebble on its own (or an older coopkv)
// refuses it rather than read tags as values.
func TestTTL_NewStoreStaysTagged(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	require.True(t, db.tagged, "a new store's values are tagged")
	require.NoError(t, db.Set([]byte("k"), []byte("v")))
	require.NoError(t, db.Close())
	db, err = Open(dir, &Options{ReadOnly: true})
	require.NoError(t, err)
	assert.True(t, db.tagged)
	v, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "v", string(v))
	require.NoError(t, db.Close())
	_, err = pebble.Open(dir, &pebble.Options{FS: vfs.Default}) // vfs.Default: no disk-health goroutine to leak
	assert.ErrorContains(t, err, "comparer name", "Pebble's default comparer refuses it")
}

// A store created before keys could expire opens and reads as before —
// its values raw — and refuses TTLs with ErrTTLUnsupported.
func TestTTL_OlderStoreReadsAsBeforeAndRefusesTTLs(t *testing.T) {
	dir := t.TempDir()
	pdb, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest})
	require.NoError(t, err)
	// Raw values, one of which starts with a byte that would be a tag.
	require.NoError(t, pdb.Set([]byte("a"), []byte("raw"), pebble.Sync))
	require.NoError(t, pdb.Set([]byte("b"), []byte{1, 2, 3}, pebble.Sync))
	require.NoError(t, pdb.Close())

	db, err := Open(dir, nil)
	require.NoError(t, err)
	defer db.Close()
	assert.False(t, db.tagged)
	ctx := context.Background()
	v, err := db.Get(ctx, []byte("b"))
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2, 3}, v)
	require.NoError(t, db.Set([]byte("c"), []byte("new")))
	it := db.Scan(ctx, nil, nil, nil)
	var got []string
	for k, v := range it.All() {
		got = append(got, string(k)+"="+string(v))
	}
	require.NoError(t, it.Close())
	assert.Equal(t, []string{"a=raw", "b=\x01\x02\x03", "c=new"}, got)
	assert.ErrorIs(t, db.SetWithTTL([]byte("d"), []byte("v"), time.Hour), ErrTTLUnsupported)
	tx, err := db.NewTxn(ctx)
	require.NoError(t, err)
	assert.ErrorIs(t, tx.SetWithTTL([]byte("d"), []byte("v"), time.Hour), ErrTTLUnsupported)
	tx.Rollback()
	exp, err := db.ExpiresAt(ctx, []byte("a"))
	require.NoError(t, err)
	assert.True(t, exp.IsZero())
}

// A MultiGet split on a slow disk judges expiry once for all its parts: at
// its start for the live store, at the snapshot's time for a snapshot.
func TestTTL_MultiGetSplitOnASlowDisk(t *testing.T) {
	clock := newFakeClock()
	db := openTest(t, "", &Options{InMemory: true, Clock: clock.now, NoWarm: true, RowCacheSize: -1})
	const n = 400
	b := db.NewBatch()
	keys := make([][]byte, n)
	for i := range n {
		keys[i] = keyN(i)
		if i%2 == 0 {
			b.SetWithTTL(keys[i], []byte("v"), time.Second)
		} else {
			b.Set(keys[i], []byte("v"))
		}
	}
	require.NoError(t, db.Apply(b))
	require.NoError(t, db.Flush())
	ctx := context.Background()
	snap, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	defer snap.Close()
	clock.advance(time.Second)

	db.reads.avg.Store(time.Millisecond) // the disk is slow: MultiGets split
	parts := multiGetParts(n)
	require.NotNil(t, parts, "%d keys split", n)
	before := db.Stats().Pool.Spawned
	vals, err := db.MultiGet(ctx, keys)
	require.NoError(t, err)
	assert.EqualValues(t, len(parts)-1, db.Stats().Pool.Spawned-before, "split into parts")
	for i, v := range vals {
		assert.Equal(t, i%2 == 1, v != nil, "key %d: the even ones have expired", i)
		if v != nil {
			assert.Equal(t, "v", string(v), "key %d: without its tag", i)
		}
	}
	vals, err = snap.MultiGet(ctx, keys)
	require.NoError(t, err)
	for i, v := range vals {
		assert.Equal(t, "v", string(v), "key %d lives at the snapshot's time", i)
	}
}

package kvtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

// The transactions (kv.Txn) of every Store: what both the embedded store
// and TiKV promise, and no more. Two things are left out on purpose:
// whether a key inserted into a range a Txn scanned (a phantom) conflicts
// — the embedded store says yes, TiKV no — and whether a write of a key
// the Txn did not read lets it commit: a backend may conflict more often
// than it must (the driver test's plain store conflicts with every write
// since its Txn began), never less.

// missing is what get returns for kv.ErrNotFound.
const missing = "<not found>"

// getter is a store, a snapshot or a Txn.
type getter interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
}

// get reads key through r: its value, or missing.
func get(t *testing.T, r getter, key string) string {
	t.Helper()
	v, err := r.Get(context.Background(), []byte(key))
	if errors.Is(err, kv.ErrNotFound) {
		return missing
	}
	require.NoError(t, err, "get %q", key)
	return string(v)
}

// values words MultiGet's answer as get words one value.
func values(vals [][]byte) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = missing
		if v != nil {
			out[i] = string(v)
		}
	}
	return out
}

// byteKeys is keys as a MultiGet's argument.
func byteKeys(keys ...string) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = []byte(k)
	}
	return out
}

// bound is a scan's bound: "" is open (nil).
func bound(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// begin opens a Txn on s, rolled back when the test ends.
func begin(t *testing.T, s kv.Store) *kv.Txn {
	t.Helper()
	tx, err := s.NewTxn(context.Background())
	require.NoError(t, err)
	t.Cleanup(tx.Rollback)
	return tx
}

// buffer buffers writes in tx: key, value pairs, a nil value a Delete.
func buffer(t *testing.T, tx *kv.Txn, kvs ...any) {
	t.Helper()
	for i := 0; i < len(kvs); i += 2 {
		k := []byte(kvs[i].(string))
		if kvs[i+1] == nil {
			require.NoError(t, tx.Delete(k))
			continue
		}
		require.NoError(t, tx.Set(k, []byte(kvs[i+1].(string))))
	}
}

// testTxnSnapshot: a Txn reads the store as of its start, whatever is
// committed after; a read-only Txn commits.
func testTxnSnapshot(t *testing.T, s kv.Store) {
	ctx := context.Background()
	write(t, s, "a", "1", "b", "1", "c", "1")
	tx := begin(t, s)
	b := s.NewBatch()
	b.Set([]byte("a"), []byte("2"))
	b.Delete([]byte("b"))
	b.DeleteRange([]byte("c"), []byte("d"))
	b.Set([]byte("new"), []byte("2"))
	require.NoError(t, s.Write(ctx, b))

	assert.Equal(t, "1", get(t, tx, "a"), "a write committed after the Txn began is not seen")
	assert.Equal(t, "1", get(t, tx, "b"), "nor a delete")
	assert.Equal(t, missing, get(t, tx, "new"))
	vals, err := tx.MultiGet(ctx, byteKeys("c", "new", "a"))
	require.NoError(t, err)
	assert.Equal(t, []string{"1", missing, "1"}, values(vals))
	ks, vs := keys(t, tx, nil, nil, nil)
	assert.Equal(t, []string{"a", "b", "c"}, ks, "nor a range deletion")
	assert.Equal(t, []string{"1", "1", "1"}, vs)
	ks, _ = keys(t, tx, nil, nil, &kv.ScanOptions{Reverse: true})
	assert.Equal(t, []string{"c", "b", "a"}, ks)
	assert.NoError(t, tx.Commit(ctx), "a read-only Txn commits, whatever was written since it began")

	tx = begin(t, s)
	assert.Equal(t, "2", get(t, tx, "a"), "a Txn begun after the write sees it")
	ks, _ = keys(t, tx, nil, nil, nil)
	assert.Equal(t, []string{"a", "new"}, ks)
	tx.Rollback()
}

// testTxnOwnWrites: a Txn's reads see its own sets and deletes, merged
// with the store in every kind of read; nobody else sees them before
// Commit.
func testTxnOwnWrites(t *testing.T, s kv.Store) {
	ctx := context.Background()
	write(t, s, "b", "old", "d", "old", "f", "old", "h", "old")
	tx := begin(t, s)
	buffer(t, tx, "a", "new", "d", "new", "b", nil, "e", "", "x", nil,
		"g", "gone", "g", nil, "h", nil, "h", "again")
	// The Txn as it sees itself: a=new d=new e= f=old h=again.

	assert.Equal(t, "new", get(t, tx, "a"))
	assert.Equal(t, missing, get(t, tx, "b"), "its own delete")
	assert.Equal(t, missing, get(t, tx, "g"), "set, then deleted")
	assert.Equal(t, "again", get(t, tx, "h"), "deleted, then set")
	assert.Equal(t, "old", get(t, tx, "f"), "the store beneath")
	v, err := tx.Get(ctx, []byte("e"))
	require.NoError(t, err)
	assert.NotNil(t, v, "its own empty value is present")
	assert.Empty(t, v)

	vals, err := tx.MultiGet(ctx, byteKeys("b", "a", "f", "g", "e", "x", "a"))
	require.NoError(t, err)
	assert.Equal(t, []string{missing, "new", "old", missing, "", missing, "new"}, values(vals))
	vals[1][0] = 'X'
	assert.Equal(t, "new", get(t, tx, "a"), "the caller owns what a Txn returns")

	for _, c := range []struct {
		start, end string
		opts       kv.ScanOptions
		want       []string
	}{
		{"", "", kv.ScanOptions{}, []string{"a", "d", "e", "f", "h"}},
		{"", "", kv.ScanOptions{Reverse: true}, []string{"h", "f", "e", "d", "a"}},
		{"", "", kv.ScanOptions{Limit: 2}, []string{"a", "d"}},
		{"", "", kv.ScanOptions{Reverse: true, Limit: 2}, []string{"h", "f"}},
		{"b", "f", kv.ScanOptions{}, []string{"d", "e"}},
		{"c", "g", kv.ScanOptions{Reverse: true, Limit: 2}, []string{"f", "e"}},
		{"b", "c", kv.ScanOptions{}, nil},
	} {
		ks, _ := keys(t, tx, bound(c.start), bound(c.end), &c.opts)
		assert.Equal(t, c.want, ks, "scan [%q, %q) %+v", c.start, c.end, c.opts)
	}
	ks, vs := keys(t, tx, nil, nil, nil)
	require.Equal(t, []string{"a", "d", "e", "f", "h"}, ks)
	assert.Equal(t, []string{"new", "new", "", "old", "again"}, vs, "values merged too")
	ks, vs = keys(t, tx, []byte("c"), nil, &kv.ScanOptions{KeysOnly: true})
	assert.Equal(t, []string{"d", "e", "f", "h"}, ks)
	assert.Empty(t, vs, "keys only")
	it := tx.Scan(ctx, []byte("b"), []byte("a"), nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), kv.ErrInvalidRange)
	require.NoError(t, it.Close())

	// Set copies its key and value.
	key, val := []byte("copied"), []byte("mine")
	require.NoError(t, tx.Set(key, val))
	key[0], val[0] = 'X', 'X'
	assert.Equal(t, "mine", get(t, tx, "copied"))

	ks, vs = keys(t, s, nil, nil, nil)
	assert.Equal(t, []string{"b", "d", "f", "h"}, ks, "nobody else sees a Txn's writes before Commit")
	assert.Equal(t, []string{"old", "old", "old", "old"}, vs)
	require.NoError(t, tx.Commit(ctx))
	ks, vs = keys(t, s, nil, nil, nil)
	assert.Equal(t, []string{"a", "copied", "d", "e", "f", "h"}, ks)
	assert.Equal(t, []string{"new", "mine", "new", "", "old", "again"}, vs)
}

// testTxnAtomicCommit: a Commit shows every write of the Txn at once, and
// only to reads that begin after it.
func testTxnAtomicCommit(t *testing.T, s kv.Store) {
	ctx := context.Background()
	write(t, s, "row/old", "1")
	before := begin(t, s) // begun before the commit
	tx := begin(t, s)
	var want []string
	for i := range 50 {
		k := fmt.Sprintf("row/%02d", i)
		require.NoError(t, tx.Set([]byte(k), []byte("v")))
		want = append(want, k)
	}
	require.NoError(t, tx.Delete([]byte("row/old")))
	snap, err := s.NewSnapshot(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, snap.Close()) })
	prefix, end := []byte("row/"), kv.PrefixEnd([]byte("row/"))
	ks, _ := keys(t, s, prefix, end, nil)
	assert.Equal(t, []string{"row/old"}, ks, "none of it before Commit")

	require.NoError(t, tx.Commit(ctx))
	ks, _ = keys(t, s, prefix, end, nil)
	assert.Equal(t, want, ks, "all of it after")
	ks, _ = keys(t, snap, prefix, end, nil)
	assert.Equal(t, []string{"row/old"}, ks, "a snapshot taken before the Commit sees none of it")
	ks, _ = keys(t, before, prefix, end, nil)
	assert.Equal(t, []string{"row/old"}, ks, "nor does a Txn begun before it")
}

// testTxnConflict: a Txn that read a key — by Get (also of a missing
// key), MultiGet or Scan — fails its Commit with kv.ErrConflict when
// another write of that key committed after it began, and writes nothing.
func testTxnConflict(t *testing.T, s kv.Store) {
	ctx := context.Background()
	// Under a prefix p each: p+"k" is read and written, p+"x" is read by
	// MultiGet and deleted by the Txn, p+"new" is read missing.
	reads := []struct {
		name string
		read func(tx *kv.Txn, p string)
	}{
		{"Get", func(tx *kv.Txn, p string) { assert.Equal(t, "1", get(t, tx, p+"k")) }},
		{"GetMissing", func(tx *kv.Txn, p string) { assert.Equal(t, missing, get(t, tx, p+"new")) }},
		{"MultiGet", func(tx *kv.Txn, p string) {
			vals, err := tx.MultiGet(ctx, byteKeys(p+"x", p+"k"))
			require.NoError(t, err)
			assert.Equal(t, []string{"1", "1"}, values(vals))
		}},
		{"Scan", func(tx *kv.Txn, p string) { // a key it returned: no phantom
			ks, _ := keys(t, tx, []byte(p+"j"), []byte(p+"l"), nil)
			assert.Equal(t, []string{p + "k"}, ks)
		}},
	}
	writes := []struct {
		name  string
		write func(p string)
		// existing: it writes p+"k" only, not the missing p+"new" (which
		// a backend may treat as writing nothing)
		existing bool
	}{
		{"Set", func(p string) { write(t, s, p+"k", "2", p+"new", "2") }, false},
		{"Delete", func(p string) {
			b := s.NewBatch()
			b.Delete([]byte(p + "k"))
			require.NoError(t, s.Write(ctx, b))
		}, true},
		{"DeleteRange", func(p string) {
			b := s.NewBatch()
			b.DeleteRange([]byte(p+"j"), []byte(p+"l"))
			require.NoError(t, s.Write(ctx, b))
		}, true},
		{"Txn", func(p string) {
			require.NoError(t, kv.Update(ctx, s, func(tx *kv.Txn) error {
				buffer(t, tx, p+"k", "2", p+"new", "2")
				return nil
			}))
		}, false},
	}
	n := 0
	for _, r := range reads {
		for _, w := range writes {
			if r.name == "GetMissing" && w.existing {
				continue
			}
			p := fmt.Sprintf("c%02d/", n)
			n++
			write(t, s, p+"k", "1", p+"x", "1")
			tx := begin(t, s)
			r.read(tx, p)
			buffer(t, tx, p+"out1", "v", p+"out2", "v", p+"x", nil)
			w.write(p)
			assert.ErrorIs(t, tx.Commit(ctx), kv.ErrConflict, "read by %s, written by %s", r.name, w.name)
			vals, err := s.MultiGet(ctx, byteKeys(p+"out1", p+"out2", p+"x"))
			require.NoError(t, err)
			assert.Equal(t, []string{missing, missing, "1"}, values(vals),
				"read by %s, written by %s: a Txn that conflicted wrote nothing", r.name, w.name)
			assert.ErrorIs(t, tx.Commit(ctx), kv.ErrTxnDone)
		}
	}
}

// testTxnWriteSkew: two Txns that each read both x and y and write one
// of them cannot both commit, whichever way they read — the doctors on
// call, of whom one must stay.
func testTxnWriteSkew(t *testing.T, s kv.Store) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		read func(tx *kv.Txn, x, y string)
	}{
		{"Get", func(tx *kv.Txn, x, y string) {
			assert.Equal(t, []string{"on", "on"}, []string{get(t, tx, x), get(t, tx, y)})
		}},
		{"MultiGet", func(tx *kv.Txn, x, y string) {
			vals, err := tx.MultiGet(ctx, byteKeys(x, y))
			require.NoError(t, err)
			assert.Equal(t, []string{"on", "on"}, values(vals))
		}},
		{"Scan", func(tx *kv.Txn, x, y string) {
			ks, _ := keys(t, tx, []byte(x), kv.PrefixEnd([]byte(y)), nil)
			assert.Equal(t, []string{x, y}, ks)
		}},
	} {
		x, y := c.name+"/x", c.name+"/y"
		write(t, s, x, "on", y, "on")
		t1, t2 := begin(t, s), begin(t, s)
		c.read(t1, x, y)
		c.read(t2, x, y)
		require.NoError(t, t1.Set([]byte(x), []byte("off")))
		require.NoError(t, t2.Set([]byte(y), []byte("off")))
		require.NoError(t, t1.Commit(ctx), "%s: nothing was written since the first began", c.name)
		assert.ErrorIs(t, t2.Commit(ctx), kv.ErrConflict, "%s: write skew", c.name)
		assert.Equal(t, []string{"off", "on"}, []string{get(t, s, x), get(t, s, y)}, c.name)
	}
}

// testTxnLostUpdate: goroutines bumping one counter through kv.Update lose
// no increment: the counter ends at the number of Updates that succeeded.
func testTxnLostUpdate(t *testing.T, s kv.Store) {
	ctx := context.Background()
	const workers, each = 4, 8
	var committed atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				err := kv.Update(ctx, s, func(tx *kv.Txn) error {
					n := 0
					v, err := tx.Get(ctx, []byte("counter"))
					if err == nil {
						n, err = strconv.Atoi(string(v))
					}
					if err != nil && !errors.Is(err, kv.ErrNotFound) {
						return err
					}
					return tx.Set([]byte("counter"), strconv.AppendInt(nil, int64(n+1), 10))
				})
				if err != nil { // ten conflicts in a row: rare, and harmless
					assert.ErrorIs(t, err, kv.ErrConflict, "worker %d", w)
					continue
				}
				committed.Add(1)
			}
		})
	}
	wg.Wait()
	require.Positive(t, committed.Load())
	assert.Equal(t, strconv.FormatInt(committed.Load(), 10), get(t, s, "counter"), "every committed increment, none lost")
}

// testTxnUpdate: Update runs fn again in a fresh Txn after a conflict,
// returns fn's own error as it is without running it again, and stops
// when ctx ends.
func testTxnUpdate(t *testing.T, s kv.Store) {
	ctx := context.Background()
	write(t, s, "k", "1")
	var txns []*kv.Txn
	var seen []string
	err := kv.Update(ctx, s, func(tx *kv.Txn) error {
		txns = append(txns, tx)
		v := get(t, tx, "k")
		seen = append(seen, v)
		if len(txns) == 1 {
			write(t, s, "k", "2") // after this Txn read k: it conflicts
		}
		return tx.Set([]byte("result"), []byte("from "+v))
	})
	require.NoError(t, err)
	require.Len(t, txns, 2, "run again after the conflict")
	assert.NotSame(t, txns[0], txns[1], "a fresh Txn each time")
	assert.Equal(t, []string{"1", "2"}, seen, "the second run sees the write the first conflicted with")
	assert.Equal(t, "from 2", get(t, s, "result"))
	_, err = txns[1].Get(ctx, []byte("k"))
	assert.ErrorIs(t, err, kv.ErrTxnDone, "Update ends its Txn")

	for _, own := range []error{errors.New("fn failed"), fmt.Errorf("fn says: %w", kv.ErrConflict)} {
		calls := 0
		err = kv.Update(ctx, s, func(tx *kv.Txn) error {
			calls++
			buffer(t, tx, "own", "x")
			return own
		})
		assert.Same(t, own, err, "fn's error as it is")
		assert.Equal(t, 1, calls, "%v: not run again, even when it is a conflict", own)
		assert.Equal(t, missing, get(t, s, "own"), "rolled back")
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	calls := 0
	err = kv.Update(cctx, s, func(tx *kv.Txn) error {
		calls++
		get(t, tx, "k")
		if calls == 1 {
			write(t, s, "k", "3")
		} else {
			cancel()
		}
		return tx.Set([]byte("cancelled"), []byte("x"))
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, calls, "no run after ctx ended")
	assert.Equal(t, missing, get(t, s, "cancelled"))
}

// everyTxnCallFails checks that every call on tx but Rollback fails with
// want.
func everyTxnCallFails(t *testing.T, tx *kv.Txn, want error) {
	t.Helper()
	ctx := context.Background()
	_, err := tx.Get(ctx, []byte("a"))
	assert.ErrorIs(t, err, want, "Get")
	_, err = tx.MultiGet(ctx, byteKeys("a"))
	assert.ErrorIs(t, err, want, "MultiGet")
	it := tx.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), want, "Scan")
	require.NoError(t, it.Close())
	assert.ErrorIs(t, tx.Set([]byte("a"), nil), want, "Set")
	assert.ErrorIs(t, tx.Delete([]byte("a")), want, "Delete")
	assert.ErrorIs(t, tx.Commit(ctx), want, "Commit")
}

// testTxnDone: after Commit or Rollback every call but Rollback is
// kv.ErrTxnDone; Rollback is idempotent, and after Commit undoes nothing.
func testTxnDone(t *testing.T, s kv.Store) {
	ctx := context.Background()
	write(t, s, "a", "1")
	tx := begin(t, s)
	assert.Equal(t, "1", get(t, tx, "a"))
	buffer(t, tx, "committed", "v")
	require.NoError(t, tx.Commit(ctx))
	everyTxnCallFails(t, tx, kv.ErrTxnDone)
	tx.Rollback()
	tx.Rollback()
	assert.Equal(t, "v", get(t, s, "committed"), "a Rollback after Commit undoes nothing")

	tx = begin(t, s)
	assert.Equal(t, "1", get(t, tx, "a"))
	buffer(t, tx, "rolled back", "v", "a", nil)
	tx.Rollback()
	everyTxnCallFails(t, tx, kv.ErrTxnDone)
	tx.Rollback()
	assert.Equal(t, []string{missing, "1"}, []string{get(t, s, "rolled back"), get(t, s, "a")}, "rolled back: nothing written")
}

// testTxnArguments: an empty key is kv.ErrEmptyKey and leaves the Txn
// usable; a Commit whose ctx is done fails, writes nothing and ends the
// Txn.
func testTxnArguments(t *testing.T, s kv.Store) {
	ctx := context.Background()
	tx := begin(t, s)
	for _, k := range [][]byte{nil, {}} {
		_, err := tx.Get(ctx, k)
		assert.ErrorIs(t, err, kv.ErrEmptyKey, "Get")
		_, err = tx.MultiGet(ctx, [][]byte{[]byte("a"), k})
		assert.ErrorIs(t, err, kv.ErrEmptyKey, "MultiGet")
		assert.ErrorIs(t, tx.Set(k, []byte("v")), kv.ErrEmptyKey, "Set")
		assert.ErrorIs(t, tx.Delete(k), kv.ErrEmptyKey, "Delete")
	}
	buffer(t, tx, "a", "1")
	assert.Equal(t, "1", get(t, tx, "a"), "still usable")

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, tx.Commit(cctx), context.Canceled)
	assert.Equal(t, missing, get(t, s, "a"), "a Commit whose ctx was done wrote nothing")
	assert.ErrorIs(t, tx.Commit(ctx), kv.ErrTxnDone, "and ended the Txn")

	tx = begin(t, s)
	buffer(t, tx, "a", "2")
	require.NoError(t, tx.Commit(ctx))
	assert.Equal(t, "2", get(t, s, "a"), "the store takes Txns after one failed")
}

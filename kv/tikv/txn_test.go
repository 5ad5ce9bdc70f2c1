package tikv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pingcap/kvproto/pkg/kvrpcpb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/tikvrpc"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// Transactions on the mock cluster (split at splitKeys: a, d, k10, k30,
// sale/060 and zz lie in six regions). What every kv.Store promises is in
// kv/kvtest; here is what TiKV does, and where it differs.

// mustTxn begins a Txn on s, rolled back by the test's cleanup.
func mustTxn(t *testing.T, s *Store) *kv.Txn {
	t.Helper()
	tx, err := s.NewTxn(context.Background())
	require.NoError(t, err)
	t.Cleanup(tx.Rollback)
	return tx
}

// set writes pairs (key, value, key, value, …) in one Write.
func set(t *testing.T, s *Store, kvs ...string) {
	t.Helper()
	b := s.NewBatch()
	for i := 0; i < len(kvs); i += 2 {
		b.Set([]byte(kvs[i]), []byte(kvs[i+1]))
	}
	require.NoError(t, s.Write(context.Background(), b))
}

// get is the store's value of key, "<missing>" if there is none.
func get(t *testing.T, s *Store, key string) string {
	t.Helper()
	v, err := s.Get(context.Background(), []byte(key))
	if errors.Is(err, kv.ErrNotFound) {
		return "<missing>"
	}
	require.NoError(t, err)
	return string(v)
}

// pairs reads it to its end as "key=value" strings.
func pairs(t *testing.T, it *kv.Iterator) []string {
	t.Helper()
	var got []string
	for k, v := range it.All() {
		got = append(got, string(k)+"="+string(v))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return got
}

func TestTxn_SeesItsOwnWrites(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	set(t, s, "a", "old", "d", "old", "k10", "old", "k30", "old", "zz", "old")
	tx := mustTxn(t, s)
	require.NoError(t, tx.Set([]byte("b"), []byte("new")))
	require.NoError(t, tx.Set([]byte("k10"), []byte("new")))
	require.NoError(t, tx.Delete([]byte("k30")))
	require.NoError(t, tx.Set([]byte("sale/060"), nil))
	require.NoError(t, tx.Delete([]byte("never")))

	v, err := tx.Get(ctx, []byte("k10"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(v))
	_, err = tx.Get(ctx, []byte("k30"))
	assert.ErrorIs(t, err, kv.ErrNotFound, "its own deletion")
	v, err = tx.Get(ctx, []byte("sale/060"))
	require.NoError(t, err)
	assert.NotNil(t, v, "an empty value is a value")
	vals, err := tx.MultiGet(ctx, [][]byte{[]byte("a"), []byte("b"), []byte("k30"), []byte("zz"), []byte("b")})
	require.NoError(t, err)
	assert.Equal(t, []string{"old", "new", "", "old", "new"}, []string{string(vals[0]), string(vals[1]), string(vals[2]), string(vals[3]), string(vals[4])})
	assert.Nil(t, vals[2])
	vals, err = tx.MultiGet(ctx, [][]byte{[]byte("b"), []byte("k30")})
	require.NoError(t, err, "its own writes alone")
	assert.Equal(t, "new", string(vals[0]))
	assert.Nil(t, vals[1])

	all := []string{"a=old", "b=new", "d=old", "k10=new", "sale/060=", "zz=old"}
	assert.Equal(t, all, pairs(t, tx.Scan(ctx, nil, nil, nil)), "across every region, merged")
	assert.Equal(t, []string{"zz=old", "sale/060=", "k10=new"}, pairs(t, tx.Scan(ctx, nil, nil, &kv.ScanOptions{Reverse: true, Limit: 3})))
	assert.Equal(t, []string{"b=", "d=", "k10="}, pairs(t, tx.Scan(ctx, []byte("b"), []byte("k30"), &kv.ScanOptions{KeysOnly: true})))
	assert.Equal(t, []string{"a=old", "b=new"}, pairs(t, tx.Scan(ctx, nil, nil, &kv.ScanOptions{Limit: 2})))
	assert.Equal(t, []string{"k10=new", "d=old"}, pairs(t, tx.Scan(ctx, []byte("c"), []byte("k30"), &kv.ScanOptions{Reverse: true, Limit: 2})), "own deletion k30 is outside; the limit counts what is returned")

	it := tx.Scan(ctx, []byte("z"), []byte("a"), nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), kv.ErrInvalidRange)
	it = tx.Scan(ctx, nil, nil, &kv.ScanOptions{Limit: -1})
	assert.False(t, it.Next())
	assert.Error(t, it.Err())

	// A write made while a scan is open is not seen by that scan (its
	// writes were taken at Scan), and does not disturb it.
	it = tx.Scan(ctx, nil, nil, &kv.ScanOptions{KeysOnly: true})
	require.True(t, it.Next())
	require.NoError(t, tx.Set([]byte("c"), []byte("during")))
	var rest []string
	for it.Next() {
		rest = append(rest, string(it.Key()))
	}
	require.NoError(t, it.Err())
	assert.Equal(t, []string{"b", "d", "k10", "sale/060", "zz"}, rest)

	require.NoError(t, tx.Commit(ctx))
	for k, want := range map[string]string{"a": "old", "b": "new", "c": "during", "k10": "new", "k30": "<missing>", "sale/060": "", "never": "<missing>"} {
		assert.Equal(t, want, get(t, s, k), k)
	}
}

func TestTxn_ReadsOneSnapshot(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	set(t, s, "a", "1", "k10", "1", "zz", "1")
	tx := mustTxn(t, s)
	b := s.NewBatch()
	b.Set([]byte("a"), []byte("2"))
	b.Delete([]byte("k10"))
	b.Set([]byte("k30"), []byte("2"))
	require.NoError(t, s.Write(ctx, b))

	v, err := tx.Get(ctx, []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, "1", string(v), "as of NewTxn")
	vals, err := tx.MultiGet(ctx, [][]byte{[]byte("k10"), []byte("k30")})
	require.NoError(t, err)
	assert.Equal(t, "1", string(vals[0]))
	assert.Nil(t, vals[1], "written after it began")
	assert.Equal(t, []string{"a=1", "k10=1", "zz=1"}, pairs(t, tx.Scan(ctx, nil, nil, nil)))
	assert.NoError(t, tx.Commit(ctx), "read-only: it saw one snapshot, and commits at once")
	assert.Equal(t, "2", get(t, s, "a"))
}

// TestTxn_HeldAgainstGC: an open Txn keeps what it reads from GC, as a
// snapshot does.
func TestTxn_HeldAgainstGC(t *testing.T) {
	s := openMock(t, &Options{GCLifetime: time.Millisecond, GCInterval: time.Hour})
	ctx := context.Background()
	set(t, s, "a", "1", "k10", "1")
	tx := mustTxn(t, s)
	txTS, ok := s.held.oldest()
	require.True(t, ok, "the Txn holds its start timestamp")
	b := s.NewBatch()
	b.DeleteRange(nil, nil)
	require.NoError(t, s.Write(ctx, b))
	time.Sleep(2 * time.Millisecond) // past the lifetime (a clock, not a condition)

	sp, err := s.gc(ctx)
	require.NoError(t, err)
	assert.Equal(t, txTS, sp, "the safe point stops at the open Txn")
	assert.Equal(t, []string{"a=1", "k10=1"}, pairs(t, tx.Scan(ctx, nil, nil, nil)), "it keeps reading")
	tx.Rollback()
	sp, err = s.gc(ctx)
	require.NoError(t, err)
	assert.Greater(t, sp, txTS, "ended, it holds nothing back")
}

// TestTxn_ReadKeyWrittenAfterItBeganConflicts: every way of reading a key —
// a Get (of a key present or missing), a MultiGet, a Scan's row — puts it
// in the commit's conflict check, against a plain Write and another Txn;
// the Txn that conflicts writes nothing.
func TestTxn_ReadKeyWrittenAfterItBeganConflicts(t *testing.T) {
	ctx := context.Background()
	reads := map[string]func(tx *kv.Txn) error{
		"Get": func(tx *kv.Txn) error { _, err := tx.Get(ctx, []byte("k10")); return err },
		"GetMissing": func(tx *kv.Txn) error {
			_, err := tx.Get(ctx, []byte("k11"))
			if errors.Is(err, kv.ErrNotFound) {
				return nil
			}
			return err
		},
		"MultiGet": func(tx *kv.Txn) error {
			_, err := tx.MultiGet(ctx, [][]byte{[]byte("a"), []byte("k10"), []byte("k11")})
			return err
		},
		"Scan": func(tx *kv.Txn) error {
			it := tx.Scan(ctx, []byte("k"), nil, &kv.ScanOptions{Limit: 2, KeysOnly: true}) // k10, k30
			for range it.All() {
			}
			return it.Err()
		},
		"ReverseScan": func(tx *kv.Txn) error {
			it := tx.Scan(ctx, nil, []byte("k30"), &kv.ScanOptions{Reverse: true, Limit: 1}) // k10
			for range it.All() {
			}
			return it.Err()
		},
	}
	writes := map[string]func(s *Store) error{
		"Write": func(s *Store) error {
			b := s.NewBatch()
			b.Set([]byte("k10"), []byte("theirs"))
			b.Set([]byte("k11"), []byte("theirs"))
			return s.Write(ctx, b)
		},
		"WriteDelete": func(s *Store) error {
			b := s.NewBatch()
			b.Delete([]byte("k10"))
			b.Set([]byte("k11"), []byte("theirs"))
			return s.Write(ctx, b)
		},
		"Txn": func(s *Store) error {
			return kv.Update(ctx, s, func(tx *kv.Txn) error {
				if err := tx.Set([]byte("k10"), []byte("theirs")); err != nil {
					return err
				}
				return tx.Set([]byte("k11"), []byte("theirs"))
			})
		},
	}
	for rname, read := range reads {
		for wname, write := range writes {
			t.Run(rname+"/"+wname, func(t *testing.T) {
				s := openMock(t, nil)
				set(t, s, "a", "1", "k10", "1", "k30", "1")
				tx := mustTxn(t, s)
				require.NoError(t, read(tx))
				require.NoError(t, tx.Set([]byte("zz"), []byte("mine")))
				require.NoError(t, tx.Set([]byte("a"), []byte("mine")))
				require.NoError(t, write(s))
				err := tx.Commit(ctx)
				assert.ErrorIs(t, err, kv.ErrConflict)
				assert.Equal(t, "<missing>", get(t, s, "zz"), "nothing of the Txn was written")
				assert.Equal(t, "1", get(t, s, "a"))
			})
		}
	}
}

func TestTxn_TwoTxnsWritingOneKey(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	set(t, s, "k10", "0")
	t1, t2 := mustTxn(t, s), mustTxn(t, s)
	require.NoError(t, t1.Set([]byte("k10"), []byte("t1")))
	require.NoError(t, t2.Set([]byte("k10"), []byte("t2")))
	require.NoError(t, t2.Set([]byte("a"), []byte("t2")))
	require.NoError(t, t1.Commit(ctx))
	assert.ErrorIs(t, t2.Commit(ctx), kv.ErrConflict, "blind writes of one key conflict on TiKV too")
	assert.Equal(t, "t1", get(t, s, "k10"))
	assert.Equal(t, "<missing>", get(t, s, "a"))
}

// TestTxn_WriteSkewIsRefused: two Txns each read x and y (in different
// regions) and write the other one: snapshot isolation alone would commit
// both; the read keys' locks let only the first.
func TestTxn_WriteSkewIsRefused(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	set(t, s, "a", "1", "zz", "1") // two on call; one may leave if the other stays
	leave := func(tx *kv.Txn, key string) {
		vals, err := tx.MultiGet(ctx, [][]byte{[]byte("a"), []byte("zz")})
		require.NoError(t, err)
		require.Equal(t, "1", string(vals[0]))
		require.Equal(t, "1", string(vals[1]), "both on call, as this Txn sees it")
		require.NoError(t, tx.Set([]byte(key), []byte("0")))
	}
	t1, t2 := mustTxn(t, s), mustTxn(t, s)
	leave(t1, "a")
	leave(t2, "zz")
	require.NoError(t, t1.Commit(ctx))
	assert.ErrorIs(t, t2.Commit(ctx), kv.ErrConflict)
	assert.Equal(t, "0", get(t, s, "a"))
	assert.Equal(t, "1", get(t, s, "zz"), "someone stays on call")

	// The same with Get and Scan as the reads.
	set(t, s, "a", "1")
	t1, t2 = mustTxn(t, s), mustTxn(t, s)
	_, err := t1.Get(ctx, []byte("a"))
	require.NoError(t, err)
	_, err = t1.Get(ctx, []byte("zz"))
	require.NoError(t, err)
	require.Equal(t, []string{"a=1", "zz=1"}, pairs(t, t2.Scan(ctx, nil, nil, nil)))
	require.NoError(t, t1.Set([]byte("a"), []byte("0")))
	require.NoError(t, t2.Set([]byte("zz"), []byte("0")))
	require.NoError(t, t2.Commit(ctx))
	assert.ErrorIs(t, t1.Commit(ctx), kv.ErrConflict)
	assert.Equal(t, "1", get(t, s, "a"))
}

// TestTxn_PhantomIsNotAConflictOnTiKV documents where TiKV differs from
// the embedded store: a key inserted after the Txn began into a range it
// scanned is not a conflict (only the keys the scan returned are locked),
// whether the scan found rows there or none.
func TestTxn_PhantomIsNotAConflictOnTiKV(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	set(t, s, "sale/001", "ann")
	tx := mustTxn(t, s)
	require.Equal(t, []string{"sale/001=ann"}, pairs(t, tx.Scan(ctx, []byte("sale/"), kv.PrefixEnd([]byte("sale/")), nil)))
	require.Empty(t, pairs(t, tx.Scan(ctx, []byte("x/"), []byte("x0"), nil)))
	require.NoError(t, tx.Set([]byte("count"), []byte("1")))
	set(t, s, "sale/070", "bob", "x/1", "new") // another region; an empty range
	assert.NoError(t, tx.Commit(ctx), "the embedded store returns ErrConflict here")
	assert.Equal(t, "1", get(t, s, "count"))
}

// TestTxn_ReadersOfOneKeyConflictOnTiKV documents the price of locking
// the keys read: TiKV records a committed lock as a write, so two Txns
// that read one key and write others conflict — the second to commit
// fails, where the embedded store commits both. Update retries it.
func TestTxn_ReadersOfOneKeyConflictOnTiKV(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	set(t, s, "k10", "rate")
	// readRate reads k10 in tx and writes key out.
	readRate := func(tx *kv.Txn, out string) error {
		if _, err := tx.Get(ctx, []byte("k10")); err != nil {
			return err
		}
		return tx.Set([]byte(out), []byte("x"))
	}
	t1, t2 := mustTxn(t, s), mustTxn(t, s)
	require.NoError(t, readRate(t1, "out1"))
	require.NoError(t, readRate(t2, "out2"))
	require.NoError(t, t1.Commit(ctx))
	assert.ErrorIs(t, t2.Commit(ctx), kv.ErrConflict)

	n := 0
	require.NoError(t, kv.Update(ctx, s, func(tx *kv.Txn) error {
		if n++; n == 1 { // another reader commits meanwhile, once
			require.NoError(t, kv.Update(ctx, s, func(tx *kv.Txn) error { return readRate(tx, "out3") }))
		}
		return readRate(tx, "out4")
	}))
	assert.Equal(t, 2, n, "the first attempt conflicted, the second committed")
	assert.Equal(t, "x", get(t, s, "out4"))
}

func TestTxn_DoneAfterCommitOrRollback(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	set(t, s, "a", "1")
	committed := mustTxn(t, s)
	require.NoError(t, committed.Set([]byte("b"), []byte("1")))
	it := committed.Scan(ctx, nil, nil, nil) // opened before, read after
	require.NoError(t, committed.Commit(ctx))
	rolledBack := mustTxn(t, s)
	require.NoError(t, rolledBack.Set([]byte("c"), []byte("1")))
	rolledBack.Rollback()
	rolledBack.Rollback()
	for name, tx := range map[string]*kv.Txn{"committed": committed, "rolled back": rolledBack} {
		_, err := tx.Get(ctx, []byte("a"))
		assert.ErrorIs(t, err, kv.ErrTxnDone, name)
		_, err = tx.MultiGet(ctx, [][]byte{[]byte("a")})
		assert.ErrorIs(t, err, kv.ErrTxnDone, name)
		sit := tx.Scan(ctx, nil, nil, nil)
		assert.False(t, sit.Next())
		assert.ErrorIs(t, sit.Err(), kv.ErrTxnDone, name)
		assert.ErrorIs(t, tx.Set([]byte("a"), nil), kv.ErrTxnDone, name)
		assert.ErrorIs(t, tx.Delete([]byte("a")), kv.ErrTxnDone, name)
		assert.ErrorIs(t, tx.Commit(ctx), kv.ErrTxnDone, name)
		tx.Rollback()
	}
	assert.False(t, it.Next(), "a scan does not outlive its Txn")
	assert.Error(t, it.Err())
	assert.Equal(t, "1", get(t, s, "b"))
	assert.Equal(t, "<missing>", get(t, s, "c"))
	_, ok := s.held.oldest()
	assert.False(t, ok, "ended Txns hold nothing against GC")
}

func TestTxn_TooLarge(t *testing.T) {
	s := openMock(t, &Options{MaxTxnBytes: 100})
	ctx := context.Background()
	tx := mustTxn(t, s)
	require.NoError(t, tx.Set([]byte("k"), make([]byte, 90)))
	require.NoError(t, tx.Set([]byte("k"), make([]byte, 99)), "an overwrite replaces the old size")
	err := tx.Set([]byte("j"), []byte("x"))
	assert.ErrorIs(t, err, kv.ErrTxnTooLarge)
	assert.ErrorContains(t, err, "MaxTxnBytes is 100")
	require.NoError(t, tx.Delete([]byte("k")), "a deletion counts its key only")
	require.NoError(t, tx.Set([]byte("j"), []byte("x")), "the Txn stays usable")
	require.NoError(t, tx.Commit(ctx))
	assert.Equal(t, "x", get(t, s, "j"))
	assert.Equal(t, "<missing>", get(t, s, "k"))

	_, err = New(mockKVStore(t, nil), &Options{MaxTxnBytes: -1})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "MaxTxnBytes")
}

func TestTxn_ClosedStore(t *testing.T) {
	s, err := New(mockKVStore(t, nil), nil)
	require.NoError(t, err)
	ctx := context.Background()
	tx, err := s.NewTxn(ctx)
	require.NoError(t, err)
	require.NoError(t, tx.Set([]byte("k"), []byte("v")))
	require.NoError(t, s.Close())
	_, err = tx.Get(ctx, []byte("k"))
	assert.ErrorIs(t, err, kv.ErrClosed, "even a key it wrote")
	_, err = tx.MultiGet(ctx, [][]byte{[]byte("x")})
	assert.ErrorIs(t, err, kv.ErrClosed)
	it := tx.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), kv.ErrClosed)
	assert.ErrorIs(t, tx.Commit(ctx), kv.ErrClosed)
	tx.Rollback()
	_, err = s.NewTxn(ctx)
	assert.ErrorIs(t, err, kv.ErrClosed)
}

func TestTxn_ContextDone(t *testing.T) {
	s := openMock(t, nil)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.NewTxn(done)
	assert.ErrorIs(t, err, context.Canceled)

	tx := mustTxn(t, s)
	_, err = tx.Get(done, []byte("k"))
	assert.ErrorIs(t, err, context.Canceled)
	_, err = tx.MultiGet(done, [][]byte{[]byte("k")})
	assert.ErrorIs(t, err, context.Canceled)
	it := tx.Scan(done, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), context.Canceled)
	require.NoError(t, tx.Set([]byte("k"), []byte("v")))
	assert.ErrorIs(t, tx.Commit(done), context.Canceled)
	assert.Equal(t, "<missing>", get(t, s, "k"), "nothing written")
}

// TestTxn_RequestsCarryTheirContextsGroupAndPriority: each read carries its
// own context's group and priority, the commit (prewrite and commit, the
// secondaries' included) Commit's.
func TestTxn_RequestsCarryTheirContextsGroupAndPriority(t *testing.T) {
	rec := &recorder{}
	s, err := New(mockKVStore(t, rec), nil)
	require.NoError(t, err)
	defer s.Close()
	set(t, s, "a", "1", "k10", "1", "zz", "1")
	in := func(group string, p resource.Priority) context.Context {
		return kv.WithPriority(kv.WithResourceGroup(context.Background(), group), p)
	}
	check := func(group string, override uint64, pri kvrpcpb.CommandPri, want ...tikvrpc.CmdType) {
		t.Helper()
		kinds := map[tikvrpc.CmdType]int{}
		for _, r := range rec.take() {
			kinds[r.Type]++
			assert.Equal(t, group, r.GetResourceControlContext().GetResourceGroupName(), "%s names the group", r.Type)
			assert.Equal(t, override, r.GetResourceControlContext().GetOverridePriority(), "%s carries the priority", r.Type)
			assert.Equal(t, pri, r.Priority, "%s: TiKV's command priority", r.Type)
			assert.Contains(t, r.GetRequestSource(), RequestSource, "%s names the source", r.Type)
		}
		for _, k := range want {
			assert.Positive(t, kinds[k], "%s was sent and checked", k)
		}
	}

	tx, err := s.NewTxn(in("begin", resource.PriorityLow))
	require.NoError(t, err)
	defer tx.Rollback()
	rec.take() // the timestamp is PD's: no TiKV request
	_, err = tx.Get(in("g1", resource.PriorityHigh), []byte("a"))
	require.NoError(t, err)
	check("g1", 16, kvrpcpb.CommandPri_High, tikvrpc.CmdGet)
	_, err = tx.MultiGet(in("g2", resource.PriorityLow), [][]byte{[]byte("k10"), []byte("zz")})
	require.NoError(t, err)
	check("g2", 1, kvrpcpb.CommandPri_Low, tikvrpc.CmdBatchGet)
	// A scan open across another read keeps its own settings.
	it := tx.Scan(in("g3", resource.PriorityHigh), nil, nil, &kv.ScanOptions{Reverse: true})
	require.True(t, it.Next())
	check("g3", 16, kvrpcpb.CommandPri_High, tikvrpc.CmdScan)
	_, err = tx.Get(in("g4", resource.PriorityLow), []byte("d"))
	require.ErrorIs(t, err, kv.ErrNotFound)
	check("g4", 1, kvrpcpb.CommandPri_Low, tikvrpc.CmdGet)
	for it.Next() {
	}
	require.NoError(t, it.Err())
	check("g3", 16, kvrpcpb.CommandPri_High)

	require.NoError(t, tx.Set([]byte("k30"), []byte("2")))
	require.NoError(t, tx.Commit(in("g5", resource.PriorityHigh)))
	check("g5", 16, kvrpcpb.CommandPri_High, tikvrpc.CmdPrewrite, tikvrpc.CmdCommit)

	tx, err = s.NewTxn(context.Background())
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.Get(kv.WithPriority(context.Background(), 5), []byte("a"))
	assert.ErrorContains(t, err, "invalid priority 5")
	require.NoError(t, tx.Set([]byte("k"), nil))
	assert.ErrorContains(t, tx.Commit(kv.WithPriority(context.Background(), 5)), "invalid priority 5")
	assert.Empty(t, rec.take(), "an invalid priority sends nothing")
}

// TestTxn_ReadOnlyCommitSendsNothing: a Txn that wrote nothing commits at
// once, without a prewrite of its read locks.
func TestTxn_ReadOnlyCommitSendsNothing(t *testing.T) {
	rec := &recorder{}
	s, err := New(mockKVStore(t, rec), nil)
	require.NoError(t, err)
	defer s.Close()
	set(t, s, "a", "1")
	tx, err := s.NewTxn(context.Background())
	require.NoError(t, err)
	_, err = tx.Get(context.Background(), []byte("a"))
	require.NoError(t, err)
	set(t, s, "a", "2")
	rec.take()
	assert.NoError(t, tx.Commit(context.Background()))
	assert.Empty(t, rec.take())
}

// TestUpdate_NoLostUpdate: counters in two regions, bumped concurrently
// through kv.Update, end at the number of Updates that succeeded — every
// one of them, since a Txn that gives up after its attempts is run again.
func TestUpdate_NoLostUpdate(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	const workers, each = 6, 8
	set(t, s, "a", "0", "zz", "0")
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for i := 0; i < each; {
				err := kv.Update(ctx, s, func(tx *kv.Txn) error {
					for _, k := range []string{"a", "zz"} {
						v, err := tx.Get(ctx, []byte(k))
						if err != nil {
							return err
						}
						n, err := strconv.Atoi(string(v))
						if err != nil {
							return err
						}
						if err := tx.Set([]byte(k), []byte(strconv.Itoa(n+1))); err != nil {
							return err
						}
					}
					return nil
				})
				switch {
				case errors.Is(err, kv.ErrConflict):
					continue // ten attempts failed: again, counting only successes
				case err != nil:
					errs <- err
					return
				}
				i++
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, strconv.Itoa(workers*each), get(t, s, "a"))
	assert.Equal(t, strconv.Itoa(workers*each), get(t, s, "zz"))
}

var (
	bankSeed      = flag.Uint64("txn-bank-seed", 0, "seed of TestTxn_Bank (0 = from the clock); a failing run logs its seed")
	bankTransfers = flag.Int("txn-bank-transfers", 30, "transfers per mover in TestTxn_Bank; raise it for a long run")
)

// TestTxn_Bank: movers transfer money between accounts in six regions
// through kv.Update, with no lock of their own, while readers sum every
// account in read-only Txns (by MultiGet and by Scan). Each customer has
// two accounts in different regions, and a transfer may overdraw one as
// long as the customer's two stay positive together — a decision on a key
// the transfer reads but does not write, which write skew would break.
// Every sum is the total, no customer is ever below zero, and so at the
// end.
func TestTxn_Bank(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	seed := *bankSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d: replay with -run TestTxn_Bank -txn-bank-seed %d", seed, seed)
	// Customer i owns accounts[i] and accounts[i+customers].
	accounts := []string{"a/0", "a/1", "d/0", "k10", "k30", "sale/060", "sale/070", "zz/0"}
	const customers, start, movers, readers = 4, 50, 6, 2
	sibling := func(i int) int { return (i + customers) % len(accounts) }
	regions := map[uint64]bool{}
	var init []string
	keys := make([][]byte, len(accounts))
	for i, a := range accounts {
		regions[regionID(t, s, a)] = true
		init = append(init, a, strconv.Itoa(start))
		keys[i] = []byte(a)
	}
	require.GreaterOrEqual(t, len(regions), 6, "the accounts span the mock's regions")
	set(t, s, init...)
	total := start * len(accounts)

	// balances reads accounts i as tx sees them.
	balances := func(tx *kv.Txn, i ...int) ([]int, error) {
		ks := make([][]byte, len(i))
		for j, a := range i {
			ks[j] = keys[a]
		}
		vals, err := tx.MultiGet(ctx, ks)
		if err != nil {
			return nil, err
		}
		b := make([]int, len(vals))
		for j, v := range vals {
			if b[j], err = strconv.Atoi(string(v)); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	transfer := func(rng *rand.Rand) error {
		from, to := rng.IntN(len(accounts)), rng.IntN(len(accounts))
		amount := 1 + rng.IntN(2*start)
		return kv.Update(ctx, s, func(tx *kv.Txn) error {
			if to == from || to == sibling(from) {
				return nil
			}
			b, err := balances(tx, from, sibling(from), to)
			if err != nil {
				return err
			}
			if b[0]+b[1] < amount {
				return nil // the customer cannot afford it, as this Txn sees it
			}
			if err := tx.Set(keys[from], []byte(strconv.Itoa(b[0]-amount))); err != nil {
				return err
			}
			return tx.Set(keys[to], []byte(strconv.Itoa(b[2]+amount)))
		})
	}
	// audit reads every balance in one read-only Txn, by MultiGet or by
	// Scan, and checks them.
	audit := func(byScan bool) error {
		tx, err := s.NewTxn(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var vals [][]byte
		if byScan {
			it := tx.Scan(ctx, nil, nil, nil)
			for k, v := range it.All() {
				if len(vals) == len(keys) || !bytes.Equal(k, keys[len(vals)]) {
					return fmt.Errorf("the scan found %q after %d accounts", k, len(vals))
				}
				vals = append(vals, bytes.Clone(v))
			}
			if err := it.Err(); err != nil {
				return err
			}
		} else if vals, err = tx.MultiGet(ctx, keys); err != nil {
			return err
		}
		sum, b := 0, make([]int, len(vals))
		for i, v := range vals {
			if b[i], err = strconv.Atoi(string(v)); err != nil {
				return err
			}
			sum += b[i]
		}
		if sum != total {
			return fmt.Errorf("the accounts sum to %d, not %d: %v", sum, total, b)
		}
		for c := range customers {
			if b[c]+b[sibling(c)] < 0 {
				return fmt.Errorf("customer %d is overdrawn: %d + %d (write skew)", c, b[c], b[sibling(c)])
			}
		}
		return tx.Commit(ctx)
	}

	var moving, reading sync.WaitGroup
	var stop atomic.Bool
	var moved, audits atomic.Int64
	errs := make(chan error, movers+readers)
	for m := range movers {
		moving.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(m)))
			for range *bankTransfers {
				err := transfer(rng)
				if errors.Is(err, kv.ErrConflict) {
					continue // it gave up after its attempts: the money did not move
				}
				if err != nil {
					errs <- err
					return
				}
				moved.Add(1)
			}
		})
	}
	for r := range readers {
		reading.Go(func() {
			for i := 0; !stop.Load(); i++ {
				if err := audit(i%2 == r); err != nil {
					errs <- err
					return
				}
				audits.Add(1)
			}
		})
	}
	moving.Wait()
	stop.Store(true)
	reading.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.Positive(t, moved.Load(), "transfers committed")
	assert.Positive(t, audits.Load(), "readers audited")
	assert.NoError(t, audit(true), "at the end")
}

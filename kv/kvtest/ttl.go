package kvtest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// Advance moves a store's clock — the one its keys expire by — on by d:
// the embedded store's Options.Clock, a cluster's timestamp oracle.
type Advance func(d time.Duration)

// RunExpiry runs the suite of keys that expire (kv.DB.SetWithTTL) against
// the stores open returns, each empty, with the function that moves its
// clock on: no test sleeps.
func RunExpiry(t *testing.T, open func(t *testing.T) (kv.Store, Advance)) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, s kv.Store, advance Advance)
	}{
		{"EveryRead", testExpiryEveryRead},
		{"Overwrites", testExpiryOverwrites},
		{"Txn", testExpiryTxn},
		{"Invalid", testExpiryInvalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, advance := open(t)
			t.Cleanup(func() { assert.NoError(t, s.Close()) })
			c.run(t, s, advance)
		})
	}
}

// writeTTL applies one batch: key k with a TTL of ttls[k] (0: none).
func writeTTL(t *testing.T, s kv.Store, ttls map[string]time.Duration) {
	t.Helper()
	b := s.NewBatch()
	for k, ttl := range ttls {
		row, err := coproc.EncodeRow(map[string]any{"k": k})
		require.NoError(t, err)
		if ttl == 0 {
			b.Set([]byte(k), row)
		} else {
			b.SetWithTTL([]byte(k), row, ttl)
		}
	}
	require.NoError(t, s.Write(context.Background(), b))
}

// reader is what the reads of a Store and of its Snapshot share.
type reader interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	Scan(ctx context.Context, start, end []byte, opts *kv.ScanOptions) *kv.Iterator
	Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error)
}

// checkLive checks that every read of r returns exactly the keys live
// (sorted) among all.
func checkLive(t *testing.T, r reader, all, live []string) {
	t.Helper()
	ctx := context.Background()
	var keys [][]byte
	for _, k := range all {
		keys = append(keys, []byte(k))
		_, err := r.Get(ctx, []byte(k))
		if slices.Contains(live, k) {
			assert.NoError(t, err, "Get %s", k)
		} else {
			assert.ErrorIs(t, err, kv.ErrNotFound, "Get %s", k)
		}
	}
	vals, err := r.MultiGet(ctx, keys)
	require.NoError(t, err)
	for i, k := range all {
		assert.Equal(t, slices.Contains(live, k), vals[i] != nil, "MultiGet %s", k)
	}
	scan := func(opts *kv.ScanOptions) []string {
		it := r.Scan(ctx, nil, nil, opts)
		var got []string
		for k := range it.All() {
			got = append(got, string(k))
		}
		require.NoError(t, it.Close())
		return got
	}
	assert.Equal(t, live, scan(nil), "Scan")
	assert.Equal(t, live, scan(&kv.ScanOptions{KeysOnly: true}), "Scan KeysOnly")
	rev := scan(&kv.ScanOptions{Reverse: true})
	slices.Reverse(rev)
	assert.Equal(t, live, rev, "Scan Reverse")
	if len(live) > 1 {
		assert.Equal(t, live[:1], scan(&kv.ScanOptions{Limit: 1}), "Scan Limit 1")
	}
	resp, err := r.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}})
	require.NoError(t, err)
	require.Len(t, resp.Rows, 1)
	assert.EqualValues(t, len(live), resp.Rows[0]["count(*)"], "Coprocessor count")
}

// A key with a TTL reads as missing from its expiry on, in every read;
// a snapshot taken before judges at its own time.
func testExpiryEveryRead(t *testing.T, s kv.Store, advance Advance) {
	ctx := context.Background()
	writeTTL(t, s, map[string]time.Duration{"a": 0, "b": time.Minute, "c": time.Hour, "d": time.Minute, "e": 0})
	all := []string{"a", "b", "c", "d", "e"}
	checkLive(t, s, all, all)
	snap, err := s.NewSnapshot(ctx)
	require.NoError(t, err)
	defer snap.Close()
	exp, err := snap.ExpiresAt(ctx, []byte("b"))
	require.NoError(t, err)
	assert.False(t, exp.IsZero(), "b has a TTL")
	exp, err = snap.ExpiresAt(ctx, []byte("a"))
	require.NoError(t, err)
	assert.True(t, exp.IsZero(), "a has none")

	advance(time.Minute + time.Second)
	checkLive(t, s, all, []string{"a", "c", "e"})
	checkLive(t, snap, all, all) // as of its time
	snap2, err := s.NewSnapshot(ctx)
	require.NoError(t, err)
	defer snap2.Close()
	_, err = snap2.ExpiresAt(ctx, []byte("b"))
	assert.ErrorIs(t, err, kv.ErrNotFound)
	advance(time.Hour)
	checkLive(t, s, all, []string{"a", "e"})
}

// A later plain Set clears a TTL; a later SetWithTTL replaces it.
func testExpiryOverwrites(t *testing.T, s kv.Store, advance Advance) {
	ctx := context.Background()
	writeTTL(t, s, map[string]time.Duration{"cleared": time.Minute, "longer": time.Minute, "shorter": time.Hour})
	writeTTL(t, s, map[string]time.Duration{"cleared": 0, "longer": time.Hour, "shorter": time.Minute})
	advance(2 * time.Minute)
	checkLive(t, s, []string{"cleared", "longer", "shorter"}, []string{"cleared", "longer"})
	_, err := s.Get(ctx, []byte("shorter"))
	assert.ErrorIs(t, err, kv.ErrNotFound)
}

// A Txn's SetWithTTL expires as a Batch's does; a Txn that read a key
// which expired before its Commit conflicts and writes nothing.
func testExpiryTxn(t *testing.T, s kv.Store, advance Advance) {
	ctx := context.Background()
	tx, err := s.NewTxn(ctx)
	require.NoError(t, err)
	require.NoError(t, tx.SetWithTTL([]byte("lease"), []byte("me"), time.Minute))
	exp, err := tx.ExpiresAt(ctx, []byte("lease"))
	require.NoError(t, err)
	assert.False(t, exp.IsZero(), "its own write's expiry")
	require.NoError(t, tx.Commit(ctx))
	v, err := s.Get(ctx, []byte("lease"))
	require.NoError(t, err)
	assert.Equal(t, "me", string(v))

	tx, err = s.NewTxn(ctx)
	require.NoError(t, err)
	defer tx.Rollback()
	_, err = tx.Get(ctx, []byte("lease"))
	require.NoError(t, err, "live when the Txn began")
	advance(time.Minute + time.Second)
	require.NoError(t, tx.Set([]byte("renewed"), []byte("yes")))
	assert.ErrorIs(t, tx.Commit(ctx), kv.ErrConflict, "it read a key that has expired since")
	_, err = s.Get(ctx, []byte("renewed"))
	assert.ErrorIs(t, err, kv.ErrNotFound, "the conflicted Txn wrote nothing")
	_, err = s.Get(ctx, []byte("lease"))
	assert.ErrorIs(t, err, kv.ErrNotFound)
}

// A TTL that is not positive is ErrInvalidTTL, and writes nothing.
func testExpiryInvalid(t *testing.T, s kv.Store, _ Advance) {
	ctx := context.Background()
	for _, ttl := range []time.Duration{0, -time.Second} {
		b := s.NewBatch()
		b.Set([]byte("other"), []byte("v"))
		b.SetWithTTL([]byte("k"), []byte("v"), ttl)
		assert.ErrorIs(t, s.Write(ctx, b), kv.ErrInvalidTTL)
		tx, err := s.NewTxn(ctx)
		require.NoError(t, err)
		assert.ErrorIs(t, tx.SetWithTTL([]byte("k"), []byte("v"), ttl), kv.ErrInvalidTTL)
		tx.Rollback()
	}
	for _, k := range []string{"k", "other"} {
		_, err := s.Get(ctx, []byte(k))
		assert.ErrorIs(t, err, kv.ErrNotFound, k)
	}
}

package tikv

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/tikv"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// fill writes n keys k000, k001, … (spanning every region of the mock)
// with value "v" + key, in one batch.
func fill(t *testing.T, s *Store, n int) []string {
	t.Helper()
	b := s.NewBatch()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("k%03d", i)
		keys = append(keys, k)
		b.Set([]byte(k), []byte("v"+k))
	}
	require.NoError(t, s.Write(context.Background(), b))
	return keys
}

func scanKeys(t *testing.T, r interface {
	Scan(context.Context, []byte, []byte, *kv.ScanOptions) *kv.Iterator
}, start, end []byte, opts *kv.ScanOptions) []string {
	t.Helper()
	var ks []string
	it := r.Scan(context.Background(), start, end, opts)
	for k, v := range it.All() {
		if opts == nil || !opts.KeysOnly {
			require.Equal(t, "v"+string(k), string(v), "the value of %s", k)
		}
		ks = append(ks, string(k))
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return ks
}

func TestStore_MockHasRegions(t *testing.T) {
	s := openMock(t, nil)
	fill(t, s, 1)
	regions := map[uint64]bool{}
	for _, k := range []string{"a", "d", "k10", "k30", "sale/060", "zz"} {
		loc, err := s.kvs.GetRegionCache().LocateKey(tikv.NewBackofferWithVars(context.Background(), 1000, nil), s.ks.key([]byte(k)))
		require.NoError(t, err)
		regions[loc.Region.GetID()] = true
	}
	assert.GreaterOrEqual(t, len(regions), 4, "the tests' keys span at least four regions")
}

func TestScan_ReverseAcrossEveryRegion(t *testing.T) {
	s := openMock(t, nil)
	keys := fill(t, s, 300) // k000…k299: regions split at k05, k20 and beyond
	desc := slices.Clone(keys)
	slices.Reverse(desc)

	assert.Equal(t, desc, scanKeys(t, s, nil, nil, &kv.ScanOptions{Reverse: true}), "every key, from the last region down")
	assert.Equal(t, desc[:7], scanKeys(t, s, nil, nil, &kv.ScanOptions{Reverse: true, Limit: 7}), "a limit: the greatest keys")
	assert.Equal(t, desc[:260], scanKeys(t, s, nil, nil, &kv.ScanOptions{Reverse: true, Limit: 260}), "a limit past a region's end and past a scan batch")
	ks := scanKeys(t, s, []byte("k010"), []byte("k210"), &kv.ScanOptions{Reverse: true})
	assert.Equal(t, desc[90:290], ks, "bounded on both sides, across three regions")
	ks = scanKeys(t, s, []byte("k010"), []byte("k210"), &kv.ScanOptions{Reverse: true, Limit: 150, KeysOnly: true})
	assert.Equal(t, desc[90:240], ks)
	assert.Equal(t, keys[40:], scanKeys(t, s, []byte("k040"), nil, nil), "forward, open end")
}

func TestScan_EmptyValuesAreStoredEncoded(t *testing.T) {
	s := openMock(t, nil)
	b := s.NewBatch()
	b.Set([]byte("a"), nil)
	b.Set([]byte("k30"), []byte{})
	require.NoError(t, s.Write(context.Background(), b), "TiKV refuses empty values; the store encodes them")
	for _, k := range []string{"a", "k30"} {
		v, err := s.Get(context.Background(), []byte(k))
		require.NoError(t, err)
		assert.NotNil(t, v)
		assert.Empty(t, v)
	}
	raw, err := s.kvs.GetSnapshot(maxReadTS(t, s)).Get(context.Background(), []byte(DefaultPrefix+"a"))
	require.NoError(t, err)
	assert.Equal(t, []byte{0}, raw.Value, "stored: the plain tag alone (valfmt)")

	// A value this package did not write is an error, not a wrong value.
	txn, err := s.kvs.Begin()
	require.NoError(t, err)
	require.NoError(t, txn.Set([]byte(DefaultPrefix+"alien"), []byte("raw")))
	require.NoError(t, txn.Commit(context.Background()))
	_, err = s.Get(context.Background(), []byte("alien"))
	assert.ErrorIs(t, err, ErrInvalidValue)
}

func maxReadTS(t *testing.T, s *Store) uint64 {
	ts, err := s.now(context.Background())
	require.NoError(t, err)
	return ts
}

func TestSnapshot_HeldAcrossWritesAndDeletesInSeveralRegions(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	keys := fill(t, s, 300)
	snap, err := s.NewSnapshot(ctx)
	require.NoError(t, err)
	defer snap.Close()

	b := s.NewBatch()
	b.DeleteRange([]byte("k000"), []byte("k010")) // first region
	b.Delete([]byte("k100"))                      // a middle one
	b.Set([]byte("k250"), []byte("changed"))      // the last of the k keys
	b.Set([]byte("new"), []byte("vnew"))
	require.NoError(t, s.Write(ctx, b))

	assert.Equal(t, keys, scanKeys(t, snap, nil, nil, &kv.ScanOptions{KeysOnly: true}), "the snapshot sees none of it")
	vals, err := snap.MultiGet(ctx, [][]byte{[]byte("k005"), []byte("k100"), []byte("k250"), []byte("new")})
	require.NoError(t, err)
	assert.Equal(t, []string{"vk005", "vk100", "vk250", ""}, []string{string(vals[0]), string(vals[1]), string(vals[2]), string(vals[3])})
	assert.Nil(t, vals[3])

	now := scanKeys(t, s, []byte("k"), kv.PrefixEnd([]byte("k")), &kv.ScanOptions{KeysOnly: true})
	assert.Len(t, now, 300-10-1, "the store moved on")
	v, err := s.Get(ctx, []byte("k250"))
	require.NoError(t, err)
	assert.Equal(t, "changed", string(v))
}

func TestWrite_ConflictsRetryAndOneWriterWins(t *testing.T) {
	// A blind write retries until it lands: WriteRetries bounds only the
	// Writes that read a range.
	s := openMock(t, &Options{WriteRetries: 1})
	ctx := context.Background()
	// Each writer sets the same two keys, in different regions, to its own
	// name: a torn result would mix names.
	const writers = 6
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for range 5 {
				b := s.NewBatch()
				b.Set([]byte("a"), fmt.Appendf(nil, "w%d", w))
				b.Set([]byte("k30"), fmt.Appendf(nil, "w%d", w))
				if err := s.Write(ctx, b); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for w, err := range errs {
		require.NoError(t, err, "writer %d completes: conflicts are retried", w)
	}
	vals, err := s.MultiGet(ctx, [][]byte{[]byte("a"), []byte("k30")})
	require.NoError(t, err)
	assert.Equal(t, string(vals[0]), string(vals[1]), "one writer's batch wins whole")
	assert.Regexp(t, `^w[0-5]$`, string(vals[0]))
	assert.ErrorIs(t, ErrWriteConflict, kv.ErrConflict, "a DeleteRange's give-up is a conflict to any Store's program")
}

func TestWrite_DeleteRangeBeyondItsBoundWritesNothing(t *testing.T) {
	s := openMock(t, &Options{MaxDeleteRangeKeys: 50})
	ctx := context.Background()
	keys := fill(t, s, 80)
	b := s.NewBatch()
	b.Set([]byte("x"), []byte("vx"))
	b.DeleteRange([]byte("k000"), []byte("k040"))
	b.DeleteRange([]byte("k040"), nil)
	err := s.Write(ctx, b)
	require.ErrorIs(t, err, ErrRangeTooLarge)
	assert.ErrorContains(t, err, "nothing was written")
	assert.Equal(t, keys, scanKeys(t, s, nil, nil, nil), "not a key deleted, nor x set")

	b.Reset()
	b.DeleteRange([]byte("k000"), []byte("k050"))
	b.Set([]byte("k010"), []byte("vk010")) // after the range: survives
	require.NoError(t, s.Write(ctx, b), "within the bound")
	assert.Equal(t, append([]string{"k010"}, keys[50:]...), scanKeys(t, s, nil, nil, nil))
}

func TestGC_KeepsWhatAnOpenSnapshotReads(t *testing.T) {
	s := openMock(t, &Options{GCLifetime: time.Millisecond, GCInterval: time.Hour})
	ctx := context.Background()
	fill(t, s, 30)
	snap, err := s.NewSnapshot(ctx)
	require.NoError(t, err)
	snapTS, ok := s.held.oldest()
	require.True(t, ok, "the snapshot holds its timestamp")
	b := s.NewBatch()
	b.DeleteRange(nil, nil)
	require.NoError(t, s.Write(ctx, b))
	time.Sleep(2 * time.Millisecond) // past the lifetime (no condition to wait for: a clock)

	sp, err := s.gc(ctx)
	require.NoError(t, err)
	assert.Equal(t, snapTS, sp, "the safe point stops at the open snapshot")
	assert.Len(t, scanKeys(t, snap, nil, nil, &kv.ScanOptions{KeysOnly: true}), 30, "the snapshot keeps reading")
	v, err := snap.Get(ctx, []byte("k003"))
	require.NoError(t, err)
	assert.Equal(t, "vk003", string(v))

	require.NoError(t, snap.Close())
	sp, err = s.gc(ctx)
	require.NoError(t, err)
	assert.Greater(t, sp, snapTS, "closed, it holds nothing back")
	old, err := s.snapshotAt(snapTS)
	require.NoError(t, err)
	defer old.Close()
	_, err = old.Get(ctx, []byte("k003"))
	assert.ErrorIs(t, err, ErrSnapshotTooOld, "a read older than the safe point is refused, not answered wrong")
	it := old.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), ErrSnapshotTooOld)
	require.NoError(t, it.Close())
}

func TestOpen_UnreachablePDReturnsByTheDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	s, err := Open(ctx, []string{addr}, nil)
	elapsed := time.Since(start)
	require.Error(t, err)
	assert.Nil(t, s)
	assert.Contains(t, err.Error(), addr, "the error names the address")
	// Generous: what is checked is that Open is bound by ctx at all
	// (client-go's own constructor blocked ~100 s here).
	assert.Less(t, elapsed, 30*time.Second)
}

func TestOptions_EveryProblemAtOnce(t *testing.T) {
	_, err := New(mockKVStore(t, nil), &Options{Prefix: []byte{}, GCInterval: -1, MaxDeleteRangeKeys: -1, Workers: -2})
	require.ErrorIs(t, err, ErrInvalidOptions)
	for _, field := range []string{"Prefix", "GCInterval", "MaxDeleteRangeKeys", "Workers"} {
		assert.ErrorContains(t, err, field)
	}
	_, err = New(mockKVStore(t, nil), &Options{Prefix: []byte{0xff, 0xff}})
	assert.ErrorContains(t, err, "all 0xff")
	_, err = Open(context.Background(), nil, nil)
	assert.ErrorIs(t, err, ErrInvalidOptions)
}

func TestStore_PrefixKeepsStoresApart(t *testing.T) {
	kvs := mockKVStore(t, nil)
	a, err := New(kvs, &Options{Prefix: []byte("app-a/")})
	require.NoError(t, err)
	defer a.Close()
	b := a.NewBatch()
	b.Set([]byte("k"), []byte("1"))
	require.NoError(t, a.Write(context.Background(), b))
	// The same cluster seen under another prefix.
	other := &Store{kvs: kvs, ks: keyspace{prefix: []byte("app-b/"), end: kv.PrefixEnd([]byte("app-b/"))}, closingCtx: context.Background()}
	_, err = reader{s: other}.Get(context.Background(), []byte("k"))
	assert.ErrorIs(t, err, kv.ErrNotFound)
	raw, err := kvs.GetSnapshot(maxReadTS(t, a)).Get(context.Background(), []byte("app-a/k"))
	require.NoError(t, err)
	assert.Equal(t, "\x001", string(raw.Value))
}

func TestCoprocessor_PagesAcrossRegionsAndChargesItsGroup(t *testing.T) {
	s := openMock(t, nil)
	ctx := context.Background()
	b := s.NewBatch()
	for i := range 100 {
		row, err := coproc.EncodeRow(map[string]any{"amount": i})
		require.NoError(t, err)
		b.Set(fmt.Appendf(nil, "sale/%03d", i), row) // split at sale/050
	}
	require.NoError(t, s.Write(ctx, b))
	rg := s.ResourceGroups()
	rg.pd = newFakePD()
	require.NoError(t, rg.Put(ctx, resourceGroup("reports", 100)))

	gctx := kv.WithResourceGroup(ctx, "reports")
	req := &coproc.Request{Ranges: []coproc.KeyRange{{Start: []byte("sale/")}}, Columns: []string{"amount"}, PagingSize: 30}
	var got []int64
	pages := 0
	for ; pages < 10; pages++ {
		resp, err := s.Coprocessor(gctx, req)
		require.NoError(t, err)
		for _, r := range resp.Rows {
			got = append(got, r["amount"].(int64))
		}
		if resp.ResumeKey == nil {
			break
		}
		req = req.ResumeFrom(resp.ResumeKey)
	}
	assert.Equal(t, 4, pages+1, "30 + 30 + 30 + 10")
	require.Len(t, got, 100)
	for i, n := range got {
		require.EqualValues(t, i, n, "every row once, in order, across the region boundary")
	}
	var ru float64
	for _, g := range s.groups.Stats() {
		if g.Name == "reports" {
			ru = g.RU
		}
	}
	assert.Positive(t, ru, "the client's pool charged the request's group")
}

func TestCoprocessor_InvalidRangeIsKvs(t *testing.T) {
	s := openMock(t, nil)
	_, err := s.Coprocessor(context.Background(), &coproc.Request{Ranges: []coproc.KeyRange{{Start: []byte("b"), End: []byte("a")}}})
	require.ErrorIs(t, err, kv.ErrInvalidRange)
	assert.ErrorIs(t, err, coproc.ErrInvalidRange)
}

func TestClose_EveryCallAfterIsErrClosed(t *testing.T) {
	s, err := New(mockKVStore(t, nil), nil)
	require.NoError(t, err)
	ctx := context.Background()
	it := s.Scan(ctx, nil, nil, nil) // not yet read: Close ends it
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), kv.ErrClosed)
	require.NoError(t, it.Close())
	_, ok := s.held.oldest()
	assert.False(t, ok, "nothing held against GC")
}

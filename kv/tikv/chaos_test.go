package tikv

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/util/codec"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// chaos moves leaders, splits regions and merges them at random (from its
// seed), one change per step, on a three-store mock cluster, over the store
// keys storeK(0..n-1). The steps are taken between a call's requests —
// between a scan's batches, a coprocessor request's pages, a
// transaction's reads and its commit — not during one: the mock cluster
// does not change a region atomically with a request in flight (a split
// under a scan request panics in its handler, "startKey not in region"),
// which a TiKV's raft log does.
//
// Region epochs follow TiKV's rules, not the mock's. TiKV gives both parts
// of a split their parent's version plus one, and a merged region more
// than either part's; the mock gives a split's new region version 1 and a
// merged region its left part's version plus one. client-go drops a region
// it is told of when a cached region overlapping it has a higher version
// (it takes the news for stale). With a split's new region left at the
// mock's version, a scan among splits and merges met a region client-go
// would not cache and failed after 40 s with "region unavailable" (3 seeds
// of 3); with TiKV's versions, 20 seeds of 20 read every row once. chaos
// raises a version where the mock's falls short, by a split just past the
// region's start and a merge back (bump).
type chaos struct {
	c      *testutils.MockCluster
	r      *rand.Rand
	storeK func(i int) []byte
	n      int

	moves, splits, merges int
}

// region is the region holding a random key k: its id, its peers, and
// whether k may split it (k is not its start).
func (ch *chaos) region() (id uint64, peers []uint64, k []byte, splittable bool) {
	k = ch.storeK(ch.r.IntN(ch.n))
	ek := codec.EncodeBytes(nil, k)
	meta, _, _, _ := ch.c.GetRegionByKey(ek)
	for _, p := range meta.GetPeers() {
		peers = append(peers, p.GetId())
	}
	return meta.GetId(), peers, k, !bytes.Equal(meta.GetStartKey(), ek)
}

// step makes k changes: a split one time in six, a merge of a region with
// the next one time in six, else a leader move.
func (ch *chaos) step(k int) {
	for range k {
		id, peers, k, splittable := ch.region()
		switch x := ch.r.IntN(6); {
		case x == 0 && splittable:
			// At the key drawn, inside the region: the new region's
			// peers on the same stores, its leader any of them, its
			// version its parent's.
			ids := ch.c.AllocIDs(len(peers))
			nid := ch.c.AllocID()
			ch.c.Split(id, nid, k, ids, ids[ch.r.IntN(len(ids))])
			ch.raise(nid, ch.version(id))
			ch.splits++
		case x == 1:
			m, _ := ch.c.GetRegion(id)
			if len(m.GetEndKey()) == 0 {
				continue // the last region: nothing after it
			}
			next, _, _, _ := ch.c.GetRegionByKey(m.GetEndKey())
			ch.raise(id, next.GetRegionEpoch().GetVersion())
			ch.c.Merge(id, next.GetId()) // +1: above both
			ch.merges++
		default:
			ch.c.ChangeLeader(id, peers[ch.r.IntN(len(peers))])
			ch.moves++
		}
	}
}

func (ch *chaos) version(id uint64) uint64 {
	m, _ := ch.c.GetRegion(id)
	return m.GetRegionEpoch().GetVersion()
}

// raise bumps region id's version until it is at least v.
func (ch *chaos) raise(id, v uint64) {
	for ch.version(id) < v {
		ch.bump(id)
	}
}

// bump raises region id's version by 2 and leaves its range and peers as
// they were: a split just past its start, and a merge back.
func (ch *chaos) bump(id uint64) {
	m, _ := ch.c.GetRegion(id)
	var start []byte
	if len(m.GetStartKey()) > 0 {
		_, raw, err := codec.DecodeBytes(m.GetStartKey(), nil)
		if err != nil {
			panic(err)
		}
		start = raw
	}
	ids := ch.c.AllocIDs(len(m.GetPeers()))
	nid := ch.c.AllocID()
	ch.c.Split(id, nid, append(start, 0), ids, ids[0])
	ch.c.Merge(id, nid)
}

// chaosStore is a Store on a fresh three-store mock cluster holding n rows
// key(0..n-1) (coprocessor rows {"i": i}), with the chaos over them.
func chaosStore(t *testing.T, n int, key func(int) []byte) (*Store, *chaos) {
	t.Helper()
	client, cluster, pdClient, err := testutils.NewMockTiKV("", nil)
	require.NoError(t, err)
	testutils.BootstrapWithMultiStores(cluster, 3)
	kvs, err := tikv.NewTestTiKVStore(client, pdClient, nil, nil, 0)
	require.NoError(t, err)
	s, err := New(kvs, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	answerProbes(cluster)
	b := s.NewBatch()
	for i := range n {
		row, err := coproc.EncodeRow(map[string]any{"i": i})
		require.NoError(t, err)
		b.Set(key(i), row)
	}
	require.NoError(t, s.Write(context.Background(), b))
	ch := &chaos{c: cluster, r: rand.New(rand.NewPCG(1, 2)), n: n, storeK: func(i int) []byte { return s.ks.key(key(i)) }}
	return s, ch
}

// Leaders move and regions split and merge between a scan's batches, a
// coprocessor request's pages, writes, and a transaction's steps, on three
// stores: scans both ways return every row once and in order, the pages
// count every row once, every acknowledged batch is there whole, and
// transfers keep their total.
func TestFaults_LeadersMoveRegionsSplitAndMerge(t *testing.T) {
	const n = 3000
	key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
	s, ch := chaosStore(t, n, key)
	ctx := context.Background()

	for _, reverse := range []bool{false, true} {
		for pass := range 3 {
			// A batch is scanBatch rows: a change every few rows lands
			// between two of the scan's requests now and then.
			it := s.Scan(ctx, []byte("k"), []byte("l"), &kv.ScanOptions{Reverse: reverse})
			want, step, end := 0, 1, n
			if reverse {
				want, step, end = n-1, -1, -1
			}
			for it.Next() {
				if !assert.Equal(t, string(key(want)), string(it.Key()), "reverse=%v pass %d: every row once, in order", reverse, pass) {
					break
				}
				if want%97 == 0 {
					ch.step(3)
				}
				want += step
			}
			require.NoError(t, it.Err(), "reverse=%v pass %d", reverse, pass)
			require.NoError(t, it.Close())
			assert.Equal(t, end, want, "reverse=%v pass %d read every row", reverse, pass)
		}
	}

	// Coprocessor pages of 250 rows, with changes between them.
	req := &coproc.Request{Ranges: []coproc.KeyRange{{Start: []byte("k"), End: []byte("l")}}, PagingSize: 250}
	seen := make([]int, n)
	for pages := 0; ; pages++ {
		require.Less(t, pages, n, "the pages end")
		resp, err := s.Coprocessor(ctx, req)
		require.NoError(t, err)
		for _, row := range resp.Rows {
			i, ok := row["i"].(int64)
			require.True(t, ok, "row %v", row)
			seen[i]++
		}
		if resp.ResumeKey == nil {
			break
		}
		req = req.ResumeFrom(resp.ResumeKey)
		ch.step(5)
	}
	for i, c := range seen {
		if !assert.Equal(t, 1, c, "coprocessor row %d: once", i) {
			break
		}
	}

	// Writes between changes: each acknowledged batch is there whole.
	var acked [][]byte
	for j := range 40 {
		b := s.NewBatch()
		for k := range 5 {
			kk := fmt.Appendf(nil, "w%03d-%d", j, k)
			b.Set(kk, []byte("x"))
			acked = append(acked, kk)
		}
		require.NoError(t, s.Write(ctx, b), "batch %d", j)
		ch.step(2)
	}
	vals, err := s.MultiGet(ctx, acked)
	require.NoError(t, err)
	for i, v := range vals {
		assert.Equal(t, "x", string(v), "acknowledged %s", acked[i])
	}

	// Transfers, with changes between a transaction's reads, its writes
	// and its commit.
	const accounts, each = 8, 100
	b := s.NewBatch()
	for a := range accounts {
		b.Set(fmt.Appendf(nil, "acct%d", a), fmt.Appendf(nil, "%d", each))
	}
	require.NoError(t, s.Write(ctx, b))
	r := rand.New(rand.NewPCG(3, 4))
	for range 40 {
		from, to := r.IntN(accounts), r.IntN(accounts)
		if from == to {
			continue
		}
		require.NoError(t, kv.Update(ctx, s, func(tx *kv.Txn) error {
			var f, g int
			for _, x := range []struct {
				a int
				v *int
			}{{from, &f}, {to, &g}} {
				v, err := tx.Get(ctx, fmt.Appendf(nil, "acct%d", x.a))
				if err != nil {
					return err
				}
				fmt.Sscan(string(v), x.v)
				ch.step(1)
			}
			if err := tx.Set(fmt.Appendf(nil, "acct%d", from), fmt.Appendf(nil, "%d", f-1)); err != nil {
				return err
			}
			ch.step(1)
			return tx.Set(fmt.Appendf(nil, "acct%d", to), fmt.Appendf(nil, "%d", g+1))
		}))
	}
	total := 0
	for a := range accounts {
		v, err := s.Get(ctx, fmt.Appendf(nil, "acct%d", a))
		require.NoError(t, err)
		var x int
		fmt.Sscan(string(v), &x)
		total += x
	}
	assert.Equal(t, accounts*each, total, "transfers kept the total")
	t.Logf("leaders moved %d times, regions split %d times and merged %d", ch.moves, ch.splits, ch.merges)
	assert.Positive(t, ch.moves)
	assert.Positive(t, ch.splits)
	assert.Positive(t, ch.merges)
}

package tikv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/tikv/tikvmock"
)

// chaos moves leaders, splits regions and merges them at random (from its
// seed), one change per step, on a three-store mock cluster, over the store
// keys storeK(0..n-1), with TiKV's region epochs (tikvmock). The steps are
// taken between a call's requests — between a scan's batches, a
// coprocessor request's pages, a transaction's reads and its commit. With
// the mock's own epochs, a scan among splits and merges failed after 40 s
// with "region unavailable" (3 seeds of 3); with TiKV's, 20 seeds of 20
// read every row once.
type chaos struct {
	c      *testutils.MockCluster
	m      *tikvmock.Cluster
	r      *rand.Rand
	storeK func(i int) []byte
	n      int

	moves, splits, merges int
}

// step makes k changes at random keys: a split one time in six, a merge
// of a region with the next one time in six, else a leader move.
func (ch *chaos) step(k int) {
	for range k {
		key := ch.storeK(ch.r.IntN(ch.n))
		switch x := ch.r.IntN(6); x {
		case 0:
			if ch.m.Split(key, ch.r.IntN(3)) != 0 {
				ch.splits++
			}
		case 1:
			if ch.m.Merge(key) {
				ch.merges++
			}
		default:
			meta := ch.m.Region(key)
			peers := meta.GetPeers()
			ch.c.ChangeLeader(meta.GetId(), peers[ch.r.IntN(len(peers))].GetId())
			ch.moves++
		}
	}
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
	ch := &chaos{c: cluster, m: tikvmock.New(cluster), r: rand.New(rand.NewPCG(1, 2)), n: n, storeK: func(i int) []byte { return s.ks.key(key(i)) }}
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

package tikv

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"github.com/tikv/client-go/v2/util/async"

	"github.com/coopkv/coopkv/kv"
)

// stallKey marks a context whose requests a staller holds back.
type stallKey struct{}

// staller is a client-go Client that holds every request of type cmd sent
// with a context marked by stallKey until that context is done, then
// passes it on: a TiKV that has not answered by the caller's deadline.
// The mock cluster then fails the request with the context's error, as a
// cancelled gRPC call does. Requests client-go sends on its own (the
// secondaries' commits, the rollback of a prewrite) carry no mark.
type staller struct {
	tikv.Client
	cmd     tikvrpc.CmdType
	stalled atomic.Int64
}

func (c *staller) hold(ctx context.Context, req *tikvrpc.Request) {
	if req.Type == c.cmd && ctx.Value(stallKey{}) != nil {
		c.stalled.Add(1)
		<-ctx.Done()
	}
}

func (c *staller) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	c.hold(ctx, req)
	return c.Client.SendRequest(ctx, addr, req, timeout)
}

func (c *staller) SendRequestAsync(ctx context.Context, addr string, req *tikvrpc.Request, cb async.Callback[*tikvrpc.Response]) {
	c.hold(ctx, req)
	c.Client.SendRequestAsync(ctx, addr, req, cb)
}

// openStalling returns a Store on a fresh mock cluster (split at
// splitKeys) whose requests of type cmd stall as staller says.
func openStalling(t *testing.T, cmd tikvrpc.CmdType) (*Store, *staller) {
	t.Helper()
	client, cluster, pdClient, err := testutils.NewMockTiKV("", nil)
	require.NoError(t, err)
	testutils.BootstrapWithMultiRegions(cluster, splitKeys...)
	st := &staller{cmd: cmd}
	kvs, err := tikv.NewTestTiKVStore(client, pdClient, func(c tikv.Client) tikv.Client { st.Client = c; return st }, nil, 0)
	require.NoError(t, err)
	s, err := New(kvs, &Options{GCLifetime: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, st
}

// transfer moves n from one account to another in one kv.Update.
func transfer(ctx context.Context, s *Store, from, to string, n int) error {
	return kv.Update(ctx, s, func(tx *kv.Txn) error {
		vals, err := tx.MultiGet(ctx, [][]byte{[]byte(from), []byte(to)})
		if err != nil {
			return err
		}
		f, _ := strconv.Atoi(string(vals[0]))
		g, _ := strconv.Atoi(string(vals[1]))
		if err := tx.Set([]byte(from), strconv.AppendInt(nil, int64(f-n), 10)); err != nil {
			return err
		}
		return tx.Set([]byte(to), strconv.AppendInt(nil, int64(g+n), 10))
	})
}

// total is the sum of the accounts k00 to k99, read by one Scan.
func total(ctx context.Context, s *Store) (int, error) {
	it := s.Scan(ctx, []byte("k00"), []byte("k99"), nil)
	defer it.Close()
	sum := 0
	for _, v := range it.All() {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, it.Err()
}

// TestCommit_DeadlineMidCommitLeavesTheStoreUsable: a kv.Update or a
// Write whose context's deadline passes while TiKV has not answered its
// prewrite or its commit fails with the context's error, and leaves the
// cluster usable: a Get, a Scan, another Update and another Write, each
// within 5 s, succeed, and the accounts keep their total. client-go takes
// a write request failed by context.DeadlineExceeded for a store that
// did not answer and probes it; the mock's stores answer no probe, so a
// deadline that reached client-go marked the store unreachable for good
// (every request then failed after 40 s with "region unavailable").
func TestCommit_DeadlineMidCommitLeavesTheStoreUsable(t *testing.T) {
	// client-go's probe of a mock store fails a second after it starts
	// (there is no health service to dial); with no time for it, it
	// fails at once, so that a store it would mark unreachable is marked
	// before the reads below rather than during them. Process-wide: this
	// package's tests do not run in parallel; restored after each
	// store's Close (client-go's default is 1 s).
	tikv.SetStoreLivenessTimeout(0)
	t.Cleanup(func() { tikv.SetStoreLivenessTimeout(time.Second) })
	accounts := []string{"k01", "k10", "k25", "k30"} // three regions
	for _, tc := range []struct {
		name string
		cmd  tikvrpc.CmdType
		op   func(ctx context.Context, s *Store) error
	}{
		{"Update/Prewrite", tikvrpc.CmdPrewrite, func(ctx context.Context, s *Store) error { return transfer(ctx, s, "k01", "k30", 10) }},
		{"Update/Commit", tikvrpc.CmdCommit, func(ctx context.Context, s *Store) error { return transfer(ctx, s, "k01", "k30", 10) }},
		{"Write/Prewrite", tikvrpc.CmdPrewrite, writeBoth},
		{"Write/Commit", tikvrpc.CmdCommit, writeBoth},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, st := openStalling(t, tc.cmd)
			for _, a := range accounts {
				set(t, s, a, "100")
			}
			ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), stallKey{}, true), 50*time.Millisecond)
			defer cancel()
			err := tc.op(ctx, s)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Positive(t, st.stalled.Load(), "the deadline passed while a %v was unanswered", tc.cmd)

			// Each within 5 s. A deadline met by the primary's commit
			// leaves the outcome undetermined and the keys locked until
			// their TTL (3 s): the first read waits it out and resolves
			// them.
			within := func() context.Context {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				t.Cleanup(cancel)
				return ctx
			}
			sum, err := total(within(), s)
			require.NoError(t, err, "a scan after the cancelled commit")
			assert.Equal(t, 400, sum)
			_, err = s.Get(within(), []byte("k01"))
			require.NoError(t, err, "a get after the cancelled commit")
			require.NoError(t, transfer(within(), s, "k30", "k01", 5), "an update after the cancelled commit")
			require.NoError(t, writeBoth(within(), s), "a write after the cancelled commit")
			sum, err = total(within(), s)
			require.NoError(t, err)
			assert.Equal(t, 400, sum)
		})
	}
}

// writeBoth rewrites k10 and k25 with their value in one Write.
func writeBoth(ctx context.Context, s *Store) error {
	b := s.NewBatch()
	b.Set([]byte("k10"), []byte("100"))
	b.Set([]byte("k25"), []byte("100"))
	return s.Write(ctx, b)
}

// TestCommit_PhaseEndMidCommitLeavesTheStoreUsable is the benchmark's
// phase end: clients running transfers (kv.Update) and Writes across three
// regions until their shared deadline passes, many of them mid-commit;
// afterwards a Scan, an Update and a Write, each within 5 s, succeed and
// the accounts keep their total.
func TestCommit_PhaseEndMidCommitLeavesTheStoreUsable(t *testing.T) {
	tikv.SetStoreLivenessTimeout(0) // as in TestCommit_DeadlineMidCommitLeavesTheStoreUsable
	t.Cleanup(func() { tikv.SetStoreLivenessTimeout(time.Second) })
	s := openMock(t, &Options{GCLifetime: -1})
	accounts := []string{"k01", "k02", "k10", "k11", "k25", "k26", "k30", "k31"} // three regions
	for _, a := range accounts {
		set(t, s, a, "100")
	}
	for round := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		var wg sync.WaitGroup
		for c := range 8 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					from, to := accounts[(c+i)%len(accounts)], accounts[(c+3*i+1)%len(accounts)]
					if from == to {
						continue
					}
					var err error
					if c%2 == 0 {
						err = transfer(ctx, s, from, to, 1)
					} else {
						err = writeZeros(ctx, s)
					}
					if err != nil && ctx.Err() == nil {
						assert.ErrorIs(t, err, kv.ErrConflict, "round %d", round)
					}
				}
			})
		}
		wg.Wait()
		cancel()

		within := func() context.Context {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			t.Cleanup(cancel)
			return ctx
		}
		sum, err := total(within(), s)
		require.NoError(t, err, "round %d: a scan after the phase", round)
		require.Equal(t, 800, sum, "round %d", round)
		require.NoError(t, transfer(within(), s, "k01", "k31", 1), "round %d: an update after the phase", round)
		require.NoError(t, writeZeros(within(), s), "round %d: a write after the phase", round)
	}
}

// writeZeros writes 0 to k05x and k40, which no transfer touches, in one
// Write across two regions.
func writeZeros(ctx context.Context, s *Store) error {
	b := s.NewBatch()
	b.Set([]byte("k05x"), []byte("0"))
	b.Set([]byte("k40"), []byte("0"))
	return s.Write(ctx, b)
}

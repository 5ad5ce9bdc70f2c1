package tikv

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	pd "github.com/tikv/pd/client"
	"github.com/tikv/pd/client/clients/tso"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/kvtest"
)

// aheadPD is a PD client whose timestamps run ahead of the mock's by
// ahead: the cluster's clock, which keys expire by, moved on by a test.
type aheadPD struct {
	pd.Client
	ahead *atomic.Int64 // nanoseconds
}

func (c aheadPD) GetTS(ctx context.Context) (int64, int64, error) {
	p, l, err := c.Client.GetTS(ctx)
	return p + c.ahead.Load()/int64(time.Millisecond), l, err
}

func (c aheadPD) GetTSAsync(ctx context.Context) tso.TSFuture {
	return aheadFuture{c.Client.GetTSAsync(ctx), c.ahead.Load()}
}

type aheadFuture struct {
	tso.TSFuture
	ahead int64
}

func (f aheadFuture) Wait() (int64, int64, error) {
	p, l, err := f.TSFuture.Wait()
	return p + f.ahead/int64(time.Millisecond), l, err
}

// openMockClock is openMock on a cluster whose clock the returned function
// moves on; the caller closes the store. It runs no sweeper: a sweep's
// transaction across a jump of the clock finds its own locks expired, and
// sweeping has tests of its own (sweep_test.go).
func openMockClock(t *testing.T) (*Store, kvtest.Advance) {
	t.Helper()
	kvs, advance := mockKVStoreClock(t)
	s, err := New(kvs, &Options{SweepInterval: -1})
	require.NoError(t, err)
	return s, advance
}

// mockKVStoreClock is a client-go store on a fresh mock cluster whose clock
// the returned function moves on.
func mockKVStoreClock(t *testing.T) (*tikv.KVStore, kvtest.Advance) {
	t.Helper()
	client, cluster, pdClient, err := testutils.NewMockTiKV("", nil)
	require.NoError(t, err)
	testutils.BootstrapWithMultiRegions(cluster, splitKeys...)
	ahead := &atomic.Int64{}
	kvs, err := tikv.NewTestTiKVStore(client, pdClient, nil, func(c pd.Client) pd.Client { return aheadPD{c, ahead} }, 0)
	require.NoError(t, err)
	return kvs, func(d time.Duration) { ahead.Add(int64(d)) }
}

func TestStore_PassesExpiryConformance(t *testing.T) {
	kvtest.RunExpiry(t, func(t *testing.T) (kv.Store, kvtest.Advance) { return openMockClock(t) })
}

// A TTL counts in the cluster's time: Store.ExpiresAt gives the write's
// timestamp's time plus the TTL.
func TestStore_ExpiresAtIsTheClustersTime(t *testing.T) {
	s, advance := openMockClock(t)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := context.Background()
	advance(time.Hour) // far from this machine's clock
	before, err := s.now(ctx)
	require.NoError(t, err)
	b := s.NewBatch()
	b.SetWithTTL([]byte("k"), []byte("v"), time.Minute)
	require.NoError(t, s.Write(ctx, b))
	exp, err := s.ExpiresAt(ctx, []byte("k"))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Unix(0, tsNanos(before)).Add(time.Minute), exp, time.Second)
	assert.True(t, exp.After(time.Now().Add(59*time.Minute)), "the cluster's clock, an hour ahead")
}

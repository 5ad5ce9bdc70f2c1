package tikvmock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The mock cluster's in-memory goleveldb leaves its memory-pool
	// drainer running after Close (client-go's known leak).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/pingcap/goleveldb/leveldb.(*DB).mpoolDrain"))
}

func newCluster(t *testing.T) *Cluster {
	t.Helper()
	client, c, pdClient, err := testutils.NewMockTiKV("", nil)
	require.NoError(t, err)
	t.Cleanup(func() { pdClient.Close(); _ = client.Close() })
	testutils.BootstrapWithMultiStores(c, 3)
	return New(c)
}

func version(c *Cluster, key string) uint64 {
	return c.Region([]byte(key)).GetRegionEpoch().GetVersion()
}

// Both parts of a split get the parent's version plus one; a merge gets
// more than either part; a split at a region's start and a merge of the
// last region do nothing.
func TestSplitAndMerge_TiKVEpochs(t *testing.T) {
	c := newCluster(t)
	v0 := version(c, "a")
	id := c.Split([]byte("m"), 1)
	require.NotZero(t, id)
	assert.Equal(t, id, c.Region([]byte("m")).GetId(), "the new region holds the split key")
	assert.Equal(t, v0+1, version(c, "a"))
	assert.Equal(t, v0+1, version(c, "m"))
	assert.Len(t, c.Region([]byte("m")).GetPeers(), 3, "on the old region's stores")

	// The right part moves ahead of the left.
	for _, k := range []string{"t", "w", "y"} {
		require.NotZero(t, c.Split([]byte(k), 0))
	}
	vLeft, vRight := version(c, "a"), version(c, "m")
	require.Greater(t, vRight, vLeft)
	assert.Zero(t, c.Split([]byte("m"), 0), "m starts its region")

	require.True(t, c.Merge([]byte("a")))
	merged := c.Region([]byte("a"))
	assert.Equal(t, merged.GetId(), c.Region([]byte("m")).GetId(), "one region over both")
	assert.Greater(t, merged.GetRegionEpoch().GetVersion(), vRight, "above both parts")
	assert.False(t, c.Merge([]byte("z")), "the last region has nothing after it")
}

// blocking is a client whose requests wait for release.
type blocking struct {
	tikv.Client
	entered, release chan struct{}
}

func (b *blocking) SendRequest(context.Context, string, *tikvrpc.Request, time.Duration) (*tikvrpc.Response, error) {
	close(b.entered)
	<-b.release
	return &tikvrpc.Response{}, nil
}

// A split waits for the requests in flight through Client.
func TestSplit_WaitsForRequestsInFlight(t *testing.T) {
	c := newCluster(t)
	b := &blocking{entered: make(chan struct{}), release: make(chan struct{})}
	cl := c.Client(b)
	sent := make(chan error, 1)
	go func() {
		_, err := cl.SendRequest(context.Background(), "store1", &tikvrpc.Request{}, time.Second)
		sent <- err
	}()
	<-b.entered
	split := make(chan uint64, 1)
	go func() { split <- c.Split([]byte("m"), 0) }()
	select {
	case <-split:
		t.Fatal("the split did not wait for the request in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(b.release)
	require.NoError(t, <-sent)
	assert.NotZero(t, <-split)
}

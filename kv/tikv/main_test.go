package tikv

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"github.com/tikv/client-go/v2/util/async"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The fault tests answer client-go's store liveness probes through
	// its failpoint (see answerProbes).
	tikv.EnableFailpoints()
	// The mock cluster's in-memory goleveldb leaves its memory-pool
	// drainer running after Close (client-go's known leak); nothing else
	// may outlive a test.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/pingcap/goleveldb/leveldb.(*DB).mpoolDrain"))
}

// splitKeys split the mock cluster into regions: every test store has
// several, so that scans, batches and coprocessor requests cross them.
var splitKeys = [][]byte{
	[]byte(DefaultPrefix + "c"),
	[]byte(DefaultPrefix + "k05"),
	[]byte(DefaultPrefix + "k20"),
	[]byte(DefaultPrefix + "sale/050"),
	[]byte(DefaultPrefix + "z"),
}

// recorder is a client-go Client that records every request it passes on.
type recorder struct {
	tikv.Client
	mu   sync.Mutex
	reqs []*tikvrpc.Request
}

func (r *recorder) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	return r.Client.SendRequest(ctx, addr, r.record(req), timeout)
}

func (r *recorder) SendRequestAsync(ctx context.Context, addr string, req *tikvrpc.Request, cb async.Callback[*tikvrpc.Response]) {
	r.Client.SendRequestAsync(ctx, addr, r.record(req), cb)
}

// record notes req and returns it.
func (r *recorder) record(req *tikvrpc.Request) *tikvrpc.Request {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return req
}

// take returns the requests recorded since the last take.
func (r *recorder) take() []*tikvrpc.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	reqs := r.reqs
	r.reqs = nil
	return reqs
}

// mockKVStore is a client-go store on the in-process mock cluster, split
// at splitKeys; rec, if not nil, records every request the store sends.
func mockKVStore(t testing.TB, rec *recorder) *tikv.KVStore {
	t.Helper()
	return mockKVStoreSplit(t, rec, splitKeys)
}

// mockKVStoreSplit is mockKVStore split at splits instead.
func mockKVStoreSplit(t testing.TB, rec *recorder, splits [][]byte) *tikv.KVStore {
	t.Helper()
	client, cluster, pdClient, err := testutils.NewMockTiKV("", nil)
	require.NoError(t, err)
	testutils.BootstrapWithMultiRegions(cluster, splits...)
	var hijack func(tikv.Client) tikv.Client
	if rec != nil {
		hijack = func(c tikv.Client) tikv.Client { rec.Client = c; return rec }
	}
	kvs, err := tikv.NewTestTiKVStore(client, pdClient, hijack, nil, 0)
	require.NoError(t, err)
	return kvs
}

// openMock returns a Store on a fresh mock cluster, closed by the test's
// cleanup.
func openMock(t testing.TB, opts *Options) *Store {
	t.Helper()
	s, err := New(mockKVStore(t, nil), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

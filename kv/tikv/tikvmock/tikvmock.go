// Package tikvmock changes the regions of client-go's in-process mock
// cluster (testutils.MockCluster) as a TiKV cluster changes its own: splits
// and merges with TiKV's region epochs, applied atomically with the
// requests the mock serves. The fault tests of package tikv and
// kvbench-tikv --faults use it; it is a package of its own so that a
// program using package tikv does not link the mock.
//
// Two things of the mock differ from TiKV, and both broke reads that TiKV
// serves:
//
//   - Epochs. TiKV gives both parts of a split their parent's version plus
//     one, and a merged region more than either part's. The mock gives a
//     split's new region version 1 and a merged region its left part's
//     plus one. client-go ignores news of a region that a cached,
//     overlapping region outranks, so with the mock's versions a scan among
//     splits and merges failed with "region unavailable" after 40 s of
//     retries. Split and Merge raise the versions to TiKV's.
//   - Atomicity. A TiKV applies a split between the requests of a region,
//     through its raft log; the mock changes a region under a request in
//     its handler, which then panics ("startKey not in region"). Requests
//     sent through Cluster.Client run under a read lock that Split and
//     Merge take for writing.
package tikvmock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/tikv/client-go/v2/testutils"
	"github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/tikvrpc"
	"github.com/tikv/client-go/v2/util/async"
	"github.com/tikv/client-go/v2/util/codec"
)

// Cluster is a mock cluster whose regions split and merge as TiKV's do.
type Cluster struct {
	c *testutils.MockCluster
	// mu orders the region changes (writers) against the requests sent
	// through Client (readers).
	mu sync.RWMutex
}

// New wraps c.
func New(c *testutils.MockCluster) *Cluster { return &Cluster{c: c} }

// Client wraps next, the mock's client, so that the requests sent through
// it and the region changes of Split and Merge happen one after another:
// pass it as the client hijack of client-go's tikv.NewTestTiKVStore.
func (c *Cluster) Client(next tikv.Client) tikv.Client { return &client{Client: next, mu: &c.mu} }

// Region is the region holding key, a store key (not encoded).
func (c *Cluster) Region(key []byte) *metapb.Region {
	m, _, _, _ := c.c.GetRegionByKey(codec.EncodeBytes(nil, key))
	return m
}

// Split splits the region holding key at key, a store key, and returns the
// new region's id, which holds key and what follows in the old region; its
// peers are on the old region's stores, its leader the one at index leader
// of them. Both parts get the old region's epoch version plus one. It
// returns 0 when key starts its region already (no split).
func (c *Cluster) Split(key []byte, leader int) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.Region(key)
	if m == nil || string(m.GetStartKey()) == string(codec.EncodeBytes(nil, key)) {
		return 0
	}
	ids := c.c.AllocIDs(len(m.GetPeers()))
	id := c.c.AllocID()
	c.c.Split(m.GetId(), id, key, ids, ids[leader%len(ids)])
	c.raise(id, c.version(m.GetId()))
	return id
}

// Merge merges the region holding key with the region after it, into the
// former, with a version above both; false when it is the last region.
func (c *Cluster) Merge(key []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.Region(key)
	if m == nil || len(m.GetEndKey()) == 0 {
		return false
	}
	next, _, _, _ := c.c.GetRegionByKey(m.GetEndKey())
	c.raise(m.GetId(), next.GetRegionEpoch().GetVersion())
	c.c.Merge(m.GetId(), next.GetId()) // its version +1: above both
	return true
}

// version is region id's epoch version.
func (c *Cluster) version(id uint64) uint64 {
	m, _ := c.c.GetRegion(id)
	return m.GetRegionEpoch().GetVersion()
}

// raise bumps region id's version until it is at least v.
func (c *Cluster) raise(id, v uint64) {
	for c.version(id) < v {
		c.bump(id)
	}
}

// bump raises region id's version by 2 and leaves its range and peers as
// they were: a split just past its start, and a merge back — the mock's
// only ways to change a version.
func (c *Cluster) bump(id uint64) {
	m, _ := c.c.GetRegion(id)
	var start []byte
	if len(m.GetStartKey()) > 0 {
		_, raw, err := codec.DecodeBytes(m.GetStartKey(), nil)
		if err != nil {
			panic(fmt.Sprintf("tikvmock: region %d starts at a key not encoded: %v", id, err))
		}
		start = raw
	}
	ids := c.c.AllocIDs(len(m.GetPeers()))
	nid := c.c.AllocID()
	c.c.Split(id, nid, append(start, 0), ids, ids[0])
	c.c.Merge(id, nid)
}

// client sends each request under mu's read lock.
type client struct {
	tikv.Client
	mu *sync.RWMutex
}

// SendRequest implements tikv.Client.
func (c *client) SendRequest(ctx context.Context, addr string, req *tikvrpc.Request, timeout time.Duration) (*tikvrpc.Response, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.Client.SendRequest(ctx, addr, req, timeout)
}

// SendRequestAsync implements tikv.Client: the mock's own sends the
// request from a goroutine of its own, past the lock.
func (c *client) SendRequestAsync(ctx context.Context, addr string, req *tikvrpc.Request, cb async.Callback[*tikvrpc.Response]) {
	go func() {
		resp, err := c.SendRequest(ctx, addr, req, 0)
		cb.Schedule(resp, err)
	}()
}

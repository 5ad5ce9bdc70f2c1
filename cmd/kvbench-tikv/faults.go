package main

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/tikv/client-go/v2/testutils"
	ctikv "github.com/tikv/client-go/v2/tikv"

	"github.com/coopkv/coopkv/kv/tikv"
)

// faults injects a cluster's faults into the mock cluster for as long as
// a run lasts (--faults): every --fault-every one of its three stores
// stops for --fault-down; --fault-election after it stopped, the leaders
// it held move to the other stores (a raft election); and every 50 ms one
// region's leader moves to another live store. Regions are not split
// while requests run: the mock cluster does not change a region
// atomically with a request in flight (its handler panics), which a
// TiKV's raft log does.
type faults struct {
	c                      *testutils.MockCluster
	every, down, election  time.Duration
	r                      *rand.Rand
	stop                   chan struct{}
	wg                     sync.WaitGroup
	stopped, moved, onDown int // counts, read after Stop
}

// mockWithFaults bootstraps c with three stores and regions split at
// splits, each region's peers on all three, and answers client-go's
// liveness probes (see answerProbes).
func mockWithFaults(c *testutils.MockCluster, splits [][]byte) {
	ctikv.EnableFailpoints()
	_, _, region, _ := testutils.BootstrapWithMultiStores(c, 3)
	for _, k := range splits {
		meta, _, _, _ := c.GetRegionByID(region)
		ids := c.AllocIDs(len(meta.GetPeers()))
		next := c.AllocID()
		c.Split(region, next, k, ids, ids[0])
		region = next // the splits are in order: the next one is in the new region
	}
	answerProbes(c)
}

// answerProbes answers client-go's liveness probes of c's stores as they
// are (tikv.MockLiveness).
func answerProbes(c *testutils.MockCluster) {
	if err := tikv.MockLiveness(c.GetAllStores()); err != nil {
		panic(err) // a constant failpoint name and a well-formed term
	}
}

// start starts injecting faults, from seed.
func (f *faults) start(seed uint64) {
	f.r = rand.New(rand.NewPCG(seed, 0xfa))
	f.stop = make(chan struct{})
	f.wg.Go(f.run)
}

// Stop stops injecting faults, with every store up, and says what it did.
func (f *faults) Stop() string {
	close(f.stop)
	f.wg.Wait()
	return fmt.Sprintf("faults: %d stores stopped for %v each (their leaders moved after %v), %d other leader moves",
		f.stopped, f.down, f.election, f.moved)
}

func (f *faults) run() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	next := time.Now().Add(f.every)
	var down *metapb.Store // the stopped store, if any
	var upAt, electAt time.Time
	for {
		select {
		case <-f.stop:
			if down != nil {
				f.c.StartStore(down.GetId())
				answerProbes(f.c)
			}
			return
		case now := <-tick.C:
			switch {
			case down == nil && now.After(next):
				stores := f.c.GetAllStores()
				down = stores[f.r.IntN(len(stores))]
				f.c.StopStore(down.GetId())
				answerProbes(f.c)
				f.stopped++
				electAt, upAt = now.Add(f.election), now.Add(f.down)
			case down != nil && now.After(upAt):
				f.c.StartStore(down.GetId())
				answerProbes(f.c)
				down = nil
				next = now.Add(f.every)
			case down != nil && !electAt.IsZero() && now.After(electAt):
				f.onDown += f.moveOff(down.GetId())
				electAt = time.Time{}
			default:
				f.moveOne(down)
			}
		}
	}
}

// moveOff moves the leaders on store off it, to the region's next peer,
// and returns how many it moved.
func (f *faults) moveOff(store uint64) int {
	n := 0
	for _, r := range f.c.GetAllRegions() {
		meta, leader, _, _ := f.c.GetRegionByID(r.Meta.GetId())
		if meta == nil || leader.GetStoreId() != store {
			continue
		}
		for _, p := range meta.GetPeers() {
			if p.GetStoreId() != store {
				f.c.ChangeLeader(meta.GetId(), p.GetId())
				n++
				break
			}
		}
	}
	return n
}

// moveOne moves a random region's leader to a random peer not on down.
func (f *faults) moveOne(down *metapb.Store) {
	regions := f.c.GetAllRegions()
	meta, _, _, _ := f.c.GetRegionByID(regions[f.r.IntN(len(regions))].Meta.GetId())
	if meta == nil {
		return
	}
	peers := meta.GetPeers()
	p := peers[f.r.IntN(len(peers))]
	if down != nil && p.GetStoreId() == down.GetId() {
		return
	}
	f.c.ChangeLeader(meta.GetId(), p.GetId())
	f.moved++
}

package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pingcap/kvproto/pkg/metapb"
	"github.com/tikv/client-go/v2/testutils"
	ctikv "github.com/tikv/client-go/v2/tikv"
	"github.com/tikv/client-go/v2/util/codec"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/kv/tikv"
	"github.com/coopkv/coopkv/kv/tikv/tikvmock"
)

// faults injects a cluster's faults into the mock cluster for as long as
// a run lasts (--faults): every --fault-every one of its three stores
// stops for --fault-down; --fault-election after it stopped, the leaders
// it held move to the other stores (a raft election); every 50 ms one
// region's leader moves to another live store; and every --fault-split a
// region splits at one of the run's keys or merges with the next, between
// the mock's requests and with TiKV's region epochs (tikvmock), keeping
// between minRegions and maxRegions of them.
type faults struct {
	c                     *testutils.MockCluster
	regions               *tikvmock.Cluster
	every, down, election time.Duration
	split                 time.Duration // 0: no splits or merges
	prefix                string        // the run's keys: prefix + bench.Key(0…keys-1)
	keys                  int64
	r                     *rand.Rand
	stop                  chan struct{}
	wg                    sync.WaitGroup
	// counts, read after Stop
	stopped, moved, onDown, splits, merges int
}

// The bounds of the regions' number under --fault-split: enough for
// scans to cross several, few enough that merges keep coming.
const minRegions, maxRegions = 6, 24

// mockWithFaults bootstraps c with three stores and regions split at
// splits, each region's peers on all three, with TiKV's region epochs,
// answers client-go's liveness probes (see answerProbes), and returns the
// cluster's regions, to change under requests.
func mockWithFaults(c *testutils.MockCluster, splits [][]byte) *tikvmock.Cluster {
	ctikv.EnableFailpoints()
	testutils.BootstrapWithMultiStores(c, 3)
	regions := tikvmock.New(c)
	for _, k := range splits {
		regions.Split(k, 0)
	}
	answerProbes(c)
	return regions
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
	return fmt.Sprintf("faults: %d stores stopped for %v each (their leaders moved after %v), %d other leader moves, %d splits, %d merges",
		f.stopped, f.down, f.election, f.moved, f.splits, f.merges)
}

func (f *faults) run() {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	next := time.Now().Add(f.every)
	var changes <-chan time.Time // region changes; nil: none
	if f.split > 0 {
		t := time.NewTicker(f.split)
		defer t.Stop()
		changes = t.C
	}
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
		case <-changes:
			f.change()
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

// change splits a region at a random key of the run, or merges the region
// of one with the next: splits while there are few regions, merges while
// there are many, either in between. The soak's region (mockSplits) is
// not merged into: its keys keep a region of their own.
func (f *faults) change() {
	key := append([]byte(f.prefix), bench.Key(f.r.Int64N(max(f.keys, 1)))...)
	n := len(f.c.GetAllRegions()) // the regions change only here
	if n < minRegions || (n < maxRegions && f.r.IntN(2) == 0) {
		if f.regions.Split(key, f.r.IntN(3)) != 0 {
			f.splits++
		}
		return
	}
	soak := codec.EncodeBytes(nil, []byte(f.prefix+"soak/"))
	if bytes.Equal(f.regions.Region(key).GetEndKey(), soak) {
		return
	}
	if f.regions.Merge(key) {
		f.merges++
	}
}

package kv

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedEnv is an oracleEnv on an in-memory Pebble whose applies wait for
// the test: each sends its batch's count on arrived, then waits for
// release.
type gatedEnv struct {
	pdb     *pebble.DB
	arrived chan uint32
	release chan struct{}
	writers sync.RWMutex
}

func newGatedEnv(t *testing.T) *gatedEnv {
	pdb, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, pdb.Close()) })
	return &gatedEnv{pdb: pdb, arrived: make(chan uint32), release: make(chan struct{})}
}

func (g *gatedEnv) env() oracleEnv {
	return oracleEnv{
		apply: func(pb *pebble.Batch) error {
			g.arrived <- pb.Count()
			<-g.release
			return g.pdb.Apply(pb, pebble.NoSync)
		},
		stopWrites: func() func() {
			g.writers.Lock()
			return g.writers.Unlock
		},
	}
}

// commit commits a transaction that read nothing and writes key, on its
// own goroutine; its outcome arrives on the channel.
func (g *gatedEnv) commit(t *testing.T, o *oracle, key string) <-chan error {
	tx := &txnCheck{start: o.begin(), reads: &readSet{}}
	pb := g.pdb.NewBatch()
	require.NoError(t, pb.Set([]byte(key), []byte("v"), nil))
	done := make(chan error, 1)
	go func() {
		done <- o.apply(pb, func() writeSet { return writeSet{keys: [][]byte{[]byte(key)}} }, tx)
	}()
	return done
}

// A leader commits one group and hands the lead on: a Commit waits for at
// most the group before its own, however many commits keep arriving. And
// the oracle's lock is free while a group is in Pebble, so NewTxn and
// Rollback do not wait out a write stall.
func TestOracle_ALeaderCommitsOneGroup(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		g := newGatedEnv(t)
		o := &oracle{env: g.env()}
		c1 := g.commit(t, o, "a")
		require.EqualValues(t, 1, <-g.arrived, "the first commit leads a group of its own")
		c2, c3 := g.commit(t, o, "b"), g.commit(t, o, "c")
		synctest.Wait() // both queued behind the group in Pebble

		require.True(t, o.mu.TryLock(), "the oracle's lock is free while a group is in Pebble")
		o.mu.Unlock()
		start := o.begin() // a transaction begins and ends meanwhile
		o.end(start)

		g.release <- struct{}{}
		assert.NoError(t, <-c1, "the first leader returns once its own group is in")
		assert.EqualValues(t, 2, <-g.arrived, "the next group, led by the first commit that queued")
		synctest.Wait()
		select {
		case <-c2:
			assert.Fail(t, "a commit returned before its group was applied")
		default:
		}
		g.release <- struct{}{}
		assert.NoError(t, <-c2)
		assert.NoError(t, <-c3)
		for _, k := range []string{"a", "b", "c"} {
			_, closer, err := g.pdb.Get([]byte(k))
			require.NoError(t, err, k)
			require.NoError(t, closer.Close())
		}
		o.mu.Lock()
		assert.Empty(t, o.log.inflight, "every applied write marked done")
		assert.False(t, o.log.busy(), "every transaction ended")
		o.mu.Unlock()
	})
}

// A transaction that begins while a commit is in Pebble starts before it:
// had it read the commit's key, it conflicts, as its snapshot may not hold
// the write.
func TestOracle_BeginBesideAGroupInPebble(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		g := newGatedEnv(t)
		o := &oracle{env: g.env()}
		c1 := g.commit(t, o, "k")
		<-g.arrived
		start := o.begin()
		g.release <- struct{}{}
		require.NoError(t, <-c1)

		reads := &readSet{}
		reads.addKey([]byte("k"))
		o.mu.Lock()
		assert.True(t, o.log.conflicts(start, reads), "it read the key of a write in flight at its start")
		assert.False(t, o.unwrittenSince([]byte("k"), start), "the row cache may not answer it for k")
		o.mu.Unlock()
		o.end(start)
	})
}

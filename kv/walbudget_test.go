package kv

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWALBudget(t *testing.T) {
	const mib = 1 << 20
	assert.EqualValues(t, mib, walBudget(0, 64*mib), "no tables yet: the least budget")
	assert.EqualValues(t, 2*mib, walBudget(2*walShare*mib, 64*mib), "a share of the tables")
	assert.EqualValues(t, 64*mib, walBudget(1<<30, 64*mib), "never past a memtable: Pebble flushes then")
	assert.EqualValues(t, mib/2, walBudget(0, mib/2), "a memtable under the least budget")
}

// trimWAL flushes a log past its budget (here the least, 1 MiB: no tables
// yet), once until that flush is done, and then leaves the small log
// after it to Pebble, as it does a log under the budget.
func TestTrimWAL(t *testing.T) {
	db := openTest(t, "", &Options{InMemory: true, NoSweep: true, CacheSize: 512 << 20})
	require.EqualValues(t, 64<<20, db.popts.MemTableSize, "a memtable larger than the log")
	write := func(n, size int) {
		val := make([]byte, size)
		for i := range n {
			require.NoError(t, db.SetWithTTL(keyN(i), val, time.Hour))
		}
	}
	write(3000, 100) // 300 KiB
	assert.Nil(t, db.trimWAL(nil), "under the budget")
	write(3000, 1024) // 3 MiB
	done := db.trimWAL(nil)
	require.NotNil(t, done, "past the budget: a flush")
	select {
	case <-done:
	default:
		assert.Equal(t, done, db.trimWAL(done), "while it runs, the same flush")
	}
	<-done
	assert.Nil(t, db.trimWAL(done), "the flush let the log go")
	assert.Less(t, db.pdb.Metrics().WAL.Size, uint64(minWALBudget))
}

// With TrimWAL, the sweeper keeps the log of a store whose keys expire
// within the budget as the writes come, before any key has expired; a
// store whose writes have no TTL is left to Pebble, as is every store
// without TrimWAL.
func TestSweep_TrimsTheWAL(t *testing.T) {
	for _, tc := range []struct{ ttl, trim bool }{{true, true}, {false, true}, {true, false}} {
		flushed := make(chan struct{}, 100)
		db := openTest(t, "", &Options{InMemory: true, CacheSize: 512 << 20, TrimWAL: tc.trim,
			sweepHooks: &sweepHooks{flushed: func() { flushed <- struct{}{} }}})
		val := make([]byte, 1024)
		for i := range 3000 {
			if tc.ttl {
				require.NoError(t, db.SetWithTTL(keyN(i), val, time.Hour))
			} else {
				require.NoError(t, db.Set(keyN(i), val))
			}
		}
		if !tc.ttl || !tc.trim {
			// The writes count what they log, on their own goroutine,
			// only for the trim: 3 MiB leave a remainder of 256 KiB.
			assert.Zero(t, db.sweep.logged.Load(), "%+v: the log not watched", tc)
			assert.Zero(t, db.Stats().Sweep.Flushes, "%+v: left to Pebble", tc)
			continue
		}
		select {
		case <-flushed:
		case <-time.After(10 * time.Second):
			require.FailNow(t, "no flush of a 3 MiB log")
		}
		assert.Positive(t, db.Stats().Sweep.Flushes)
	}
}

package readpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lend protocol alone: no worker goroutine runs; the test plays the
// workers (parking them) and the borrowers, under no lock since it is the
// only goroutine.

// tokens reports how many wake-up tokens w has been sent.
func tokens(w *worker) int { return len(w.wake) }

func TestSlots_BorrowOnlyFreeSlots(t *testing.T) {
	ss := newSlots(3)
	assert.Nil(t, ss.borrow(), "every worker awake: nothing to lend")

	w := ss.workers[1]
	ss.parkLocked(w)
	assert.Equal(t, lendFree, w.lend.Load())
	assert.True(t, w.parked)
	assert.Equal(t, []*worker{w}, ss.parked)

	got := ss.borrow()
	require.Same(t, w, got, "the one free slot")
	assert.Equal(t, lendLent, w.lend.Load())
	assert.Equal(t, []*worker{w}, ss.parked, "a lent worker stays parked")
	assert.Nil(t, ss.borrow(), "a lent slot is not lent twice")

	ss.release(w)
	assert.Equal(t, lendFree, w.lend.Load())
	assert.Same(t, w, ss.borrow(), "released, it may be lent again")
	assert.Zero(t, tokens(w), "lending wakes nobody")
}

func TestSlots_BorrowsAtMostOnePerParkedWorker(t *testing.T) {
	ss := newSlots(4)
	for _, w := range ss.workers {
		ss.parkLocked(w)
	}
	seen := map[*worker]bool{}
	for range 4 {
		w := ss.borrow()
		require.NotNil(t, w)
		assert.False(t, seen[w], "each slot once")
		seen[w] = true
	}
	assert.Nil(t, ss.borrow(), "never more borrowers than workers")
}

func TestSlots_UnparkOneSkipsLentAndTakesTheWarmest(t *testing.T) {
	ss := newSlots(3)
	w0, w1, w2 := ss.workers[0], ss.workers[1], ss.workers[2]
	ss.parkLocked(w0)
	ss.parkLocked(w1)
	ss.parkLocked(w2)
	// Lend w2, the last parked: only a borrow of the free ones could
	// take another, so lend until w2 is taken and give the rest back.
	var lent []*worker
	for {
		w := ss.borrow()
		require.NotNil(t, w)
		if w == w2 {
			break
		}
		lent = append(lent, w)
	}
	for _, w := range lent {
		ss.release(w)
	}

	got := ss.unparkOneLocked()
	assert.Same(t, w1, got, "the last parked whose slot is not lent")
	assert.Equal(t, lendAwake, w1.lend.Load())
	assert.False(t, w1.parked)
	assert.Equal(t, []*worker{w0, w2}, ss.parked)

	assert.Same(t, w0, ss.unparkOneLocked())
	assert.Nil(t, ss.unparkOneLocked(), "only a lent one is left: a pusher cannot wake it")
	assert.Equal(t, []*worker{w2}, ss.parked)
	assert.Equal(t, lendLent, w2.lend.Load())
}

func TestSlots_WakeLocked(t *testing.T) {
	ss := newSlots(2)
	w := ss.workers[0]
	assert.False(t, ss.wakeLocked(w), "not parked")

	ss.parkLocked(w)
	require.Same(t, w, ss.borrow())
	assert.False(t, ss.wakeLocked(w), "lent: its borrower gives it back first")
	assert.True(t, w.parked)

	ss.release(w)
	assert.True(t, ss.wakeLocked(w))
	assert.Equal(t, lendAwake, w.lend.Load())
	assert.False(t, w.parked)
	assert.Empty(t, ss.parked)
	assert.False(t, ss.wakeLocked(w), "woken once")
}

// TestGiveBack_WakesTheWorkerOnlyForWork: a slot given back with nothing
// queued leaves its worker asleep and lendable; with work queued meanwhile
// (a pusher found the slot lent and woke nobody), or the pool closing, the
// worker is taken off the parked list and sent its token. No worker
// goroutine: the pool is only the state giveBack reads.
func TestGiveBack_WakesTheWorkerOnlyForWork(t *testing.T) {
	for _, tc := range []struct {
		name          string
		queued        int64
		closed, woken bool
	}{
		{"nothing queued", 0, false, false},
		{"work queued meanwhile", 1, false, true},
		{"pool closing", 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pool{slots: newSlots(1)}
			p.queued.Store(tc.queued)
			p.closedFlag.Store(tc.closed)
			w := p.slots.workers[0]
			p.slots.parkLocked(w)
			require.Same(t, w, p.borrow())

			p.giveBack(w)
			if tc.woken {
				assert.Equal(t, lendAwake, w.lend.Load())
				assert.False(t, w.parked)
				assert.Empty(t, p.slots.parked)
				assert.Equal(t, 1, tokens(w), "one token")
				assert.Nil(t, p.borrow(), "an awake worker's slot is not lent")
			} else {
				assert.Equal(t, lendFree, w.lend.Load())
				assert.True(t, w.parked)
				assert.Zero(t, tokens(w))
				assert.Same(t, w, p.borrow(), "free to lend again")
			}
		})
	}
}

package readpool

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocalQueue_PopFrontStealBack(t *testing.T) {
	var l localQueue
	hs := make([]*Handle, 5)
	for i := range hs {
		hs[i] = &Handle{}
		l.push(hs[i])
	}
	assert.Same(t, hs[0], l.pop(), "the owner pops in the order taken")
	got := l.stealHalf(nil)
	assert.Equal(t, []*Handle{hs[4], hs[3]}, got, "a thief takes half of the rest, from the back")
	assert.Equal(t, 2, l.len())
	assert.Same(t, hs[1], l.pop())
	assert.Equal(t, []*Handle{hs[2]}, l.stealHalf(nil), "half of one is one")
	assert.Nil(t, l.pop())
	assert.Empty(t, l.stealHalf(nil))

	// The ring wraps.
	for round := range 3 {
		for i := range localCap {
			l.push(hs[(i+round)%len(hs)])
		}
		for i := range localCap {
			assert.Same(t, hs[(i+round)%len(hs)], l.pop())
		}
	}
}

func TestMLFQ_PopBatchTakesPointReadsAfterAPointRead(t *testing.T) {
	q := NewMLFQ(MLFQOptions{})
	scan := &Entry{}
	get1, get2, get3 := &Entry{Short: true}, &Entry{Short: true}, &Entry{Short: true}
	for _, e := range []*Entry{scan, get1, get2, get3} {
		q.Push(e, 0)
	}
	first := q.Pop(0)
	require.Same(t, get1, first, "point reads first among the fresh")
	assert.Same(t, get2, q.PopBatch(first, 0))
	assert.Same(t, get3, q.PopBatch(first, 0))
	assert.Nil(t, q.PopBatch(first, 0), "no scan in a batch")
	assert.Same(t, scan, q.Pop(0))

	q.Push(get1, 0)
	assert.Nil(t, q.PopBatch(scan, 0), "nothing rides along with a scan")
	ran := &Entry{Short: true, Elapsed: time.Microsecond}
	assert.Nil(t, q.PopBatch(ran, 0), "nor with a point read that ran already")
	assert.Equal(t, 1, q.Len())
}

func TestWorkStealing_BatchesInArrivalOrder(t *testing.T) {
	q := NewWorkStealing()
	a, b, c := &Entry{}, &Entry{Short: true}, &Entry{}
	for _, e := range []*Entry{a, b, c} {
		q.Push(e, 0)
	}
	first := q.Pop(0)
	require.Same(t, a, first)
	assert.Same(t, b, q.PopBatch(first, 0))
	assert.Same(t, c, q.PopBatch(first, 0))
	assert.Nil(t, q.PopBatch(first, 0))
	assert.Equal(t, "work-stealing", q.Stats().Kind)
}

// batchBehindBlocker occupies every one of p's workers with a blocking
// task, then queues a blocker and calls queueRest to queue more, then frees
// the first worker: it pops the blocker and takes the rest into its local
// queue. It returns once the blocker's step has started, with the
// blocker's Done channel and the functions that release the blocker and
// the other workers.
func batchBehindBlocker(t *testing.T, p *Pool, queueRest func()) (blockerDone chan error, releaseBlocker, releaseOthers func()) {
	t.Helper()
	var occupy []chan struct{}
	for range p.Options().Workers {
		release := make(chan struct{})
		task, _, started := blockingTask(release)
		_, err := p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
		<-started
		occupy = append(occupy, release)
	}
	release := make(chan struct{})
	blocker, blockerDone, started := blockingTask(release)
	_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
	require.NoError(t, err)
	queueRest()
	close(occupy[0])
	<-started
	return blockerDone, sync.OnceFunc(func() { close(release) }), sync.OnceFunc(func() {
		for _, r := range occupy[1:] {
			close(r)
		}
	})
}

// A worker whose step blocks with a batch behind it: an idle worker steals
// the batch, which completes while the step still blocks.
func TestPool_IdleWorkerStealsABlockedWorkersBatch(t *testing.T) {
	p := newPool(t, Options{Workers: 2, Queue: NewWorkStealing(), LongStep: time.Hour})
	var dones []chan error
	_, releaseBlocker, releaseOthers := batchBehindBlocker(t, p, func() {
		for range 5 {
			task, done := readyTask()
			_, err := p.Spawn(context.Background(), task, SpawnOptions{})
			require.NoError(t, err)
			dones = append(dones, done)
		}
	})
	defer releaseBlocker()
	assert.Equal(t, int64(5), p.Stats().Batched, "the blocked worker took the five behind its task")
	releaseOthers()
	for i, done := range dones {
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("task %d of the batch waits behind the blocked step", i)
		}
	}
	assert.Equal(t, int64(5), p.Stats().Stolen, "all five were stolen, half at a time")
	releaseBlocker()
}

// A task cancelled while it waits in a local queue ends with its context's
// error, unstepped; one the pool's Close finds there ends with ErrClosed.
func TestPool_LocalQueueCancelAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Options{Workers: 1, Queue: NewWorkStealing(), LongStep: time.Hour})
		require.NoError(t, err)
		stepped := make(chan string, 3)
		spawn := func(ctx context.Context, name string) chan error {
			task, done := doneTask(func(*StepContext) Status { stepped <- name; return Ready })
			_, err := p.Spawn(ctx, task, SpawnOptions{})
			require.NoError(t, err)
			return done
		}

		ctx, cancel := context.WithCancel(context.Background())
		var cancelledDone, keptDone chan error
		blockerDone, releaseBlocker, _ := batchBehindBlocker(t, p, func() {
			cancelledDone = spawn(ctx, "cancelled")
			keptDone = spawn(context.Background(), "kept")
		})
		defer releaseBlocker()
		require.Equal(t, int64(2), p.Stats().Batched)
		cancel()
		releaseBlocker()
		assert.ErrorIs(t, <-cancelledDone, context.Canceled)
		assert.NoError(t, <-keptDone)
		assert.NoError(t, <-blockerDone)
		assert.Equal(t, "kept", <-stepped, "the cancelled task never stepped")

		// Again, closing the pool while one waits in the local queue.
		var closedDone chan error
		blockerDone, releaseBlocker, _ = batchBehindBlocker(t, p, func() {
			closedDone = spawn(context.Background(), "closed")
		})
		defer releaseBlocker()
		closeErr := make(chan error, 1)
		go func() { closeErr <- p.Close() }()
		synctest.Wait() // Close has begun: it waits for the blocker's step
		late, _ := readyTask()
		require.ErrorIs(t, p.Go(context.Background(), late, SpawnOptions{}), ErrClosed)
		releaseBlocker()
		require.NoError(t, <-closeErr)
		assert.NoError(t, <-blockerDone, "the running step finished")
		assert.ErrorIs(t, <-closedDone, ErrClosed, "the one in the local queue did not step")
		assert.Empty(t, stepped)
	})
}

// Point reads queued behind a point read go to the local queue with it
// under the MLFQ too, and all of them complete.
func TestPool_MLFQBatchesPointReads(t *testing.T) {
	p := newPool(t, Options{Workers: 1, Queue: NewMLFQ(MLFQOptions{}), Spares: -1, LongStep: time.Hour})
	releaseOccupier := make(chan struct{})
	occupier, _, started := blockingTask(releaseOccupier)
	_, err := p.Spawn(context.Background(), occupier, SpawnOptions{})
	require.NoError(t, err)
	<-started
	var dones []chan error
	for range 4 {
		task, done := readyTask()
		_, err := p.Spawn(context.Background(), task, SpawnOptions{Short: true})
		require.NoError(t, err)
		dones = append(dones, done)
	}
	close(releaseOccupier)
	for _, done := range dones {
		assert.NoError(t, <-done)
	}
	assert.Equal(t, int64(3), p.Stats().Batched, "three rode along with the first")
}

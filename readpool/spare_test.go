package readpool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMLFQ_PopUrgentTakesFreshPointReadsOnly(t *testing.T) {
	q := NewMLFQ(MLFQOptions{})
	low := &Entry{Fixed: true, FixedLevel: 1, Short: true}
	youngScan := &Entry{Elapsed: ms}
	newScan := &Entry{}
	q.Push(low, 0)
	q.Push(youngScan, 0)
	q.Push(newScan, 0)
	assert.Nil(t, q.PopUrgent(0), "no point read queued: scans and level 1 are not for spares")
	assert.Zero(t, q.Urgent())
	assert.Equal(t, 3, q.Len())

	get1, get2 := &Entry{Short: true}, &Entry{Short: true}
	q.Push(get1, 0)
	q.Push(get2, 0)
	assert.Equal(t, 2, q.Urgent())
	e := q.PopUrgent(0)
	assert.Same(t, get1, e, "in arrival order")
	assert.Equal(t, int64(0), e.Class)
	q.Done(e, 0, 0)
	assert.Same(t, get2, q.PopUrgent(0))
	assert.Nil(t, q.PopUrgent(0))
	assert.Equal(t, int64(0), q.Preemption().Load(), "the scans still wait on level 0")
	assert.Equal(t, 3, q.Len())
}

// Among identities that have run nothing, point reads go first; then the
// others in arrival order, then least attained service.
func TestMLFQ_PointReadsFirstAmongFresh(t *testing.T) {
	q := NewMLFQ(MLFQOptions{})
	youngScan := &Entry{Elapsed: ms}
	newScan := &Entry{}
	get := &Entry{Short: true}
	q.Push(youngScan, 0)
	q.Push(newScan, 0)
	q.Push(get, 0)
	for _, want := range []*Entry{get, newScan, youngScan} {
		e := q.Pop(0)
		assert.Same(t, want, e)
		q.Done(e, 0, 0)
	}
}

// PopUrgent ignores the shares: level 1 far behind its share does not stop
// a spare from taking level 0.
func TestMLFQ_PopUrgentIgnoresShares(t *testing.T) {
	q := NewMLFQ(MLFQOptions{})
	now := time.Duration(0)
	// Level 0 has had all the time: Pop would pick level 1 next.
	for range 10 {
		e := &Entry{}
		q.Push(e, now)
		simStep(q, &now, func(*Entry) time.Duration { return ms }, false)
	}
	q.Push(&Entry{Fixed: true, FixedLevel: 1}, now)
	urgent := &Entry{Short: true}
	q.Push(urgent, now)
	assert.Equal(t, int64(1), q.Pop(now).Class, "by the shares, level 1's turn")
	assert.Same(t, urgent, q.PopUrgent(now))
}

// holdTheWorker has p's only worker step a task until release is called,
// which waits for the task's end. Call it with p's goroutines asleep.
func holdTheWorker(t *testing.T, p *Pool) (release func()) {
	t.Helper()
	synctest.Wait() // the worker and the spares asleep: the blocker goes to the worker
	ch := make(chan struct{})
	blocker, blockerDone, started := blockingTask(ch)
	_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
	require.NoError(t, err)
	<-started
	return func() {
		close(ch)
		require.NoError(t, <-blockerDone)
	}
}

func TestSpare_StepsUrgentWorkWhileEveryWorkerIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, LongStep: time.Hour})
		require.Equal(t, 1, p.Stats().Spares)
		release := holdTheWorker(t, p)

		for range 3 {
			task, done := readyTask()
			require.NoError(t, p.Go(context.Background(), task, SpawnOptions{Short: true, Inline: true}))
			require.NoError(t, <-done, "stepped while the only worker is stuck")
		}
		st := p.Stats()
		assert.EqualValues(t, 3, st.SpareSteps)
		assert.Zero(t, st.Queued)
		release()
	})
}

func TestSpare_LeavesEverythingButPointReadsToTheWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, LongStep: time.Hour})
		release := holdTheWorker(t, p)

		task, done := readyTask()
		_, err := p.Spawn(context.Background(), task, SpawnOptions{Fixed: true, Level: 1})
		require.NoError(t, err)
		scan, scanDone := readyTask()
		_, err = p.Spawn(context.Background(), scan, SpawnOptions{}) // level 0, not a point read
		require.NoError(t, err)
		synctest.Wait()
		st := p.Stats()
		assert.Equal(t, 2, st.Queued, "a scan and level 1 wait for a worker")
		assert.Zero(t, st.SpareSteps)

		// A Get wakes the spare; it steps the Get and leaves level 1 alone.
		get, getDone := readyTask()
		_, err = p.Spawn(context.Background(), get, SpawnOptions{Short: true})
		require.NoError(t, err)
		require.NoError(t, <-getDone)
		synctest.Wait()
		st = p.Stats()
		assert.EqualValues(t, 1, st.SpareSteps)
		assert.Equal(t, 2, st.Queued, "the others still wait for a worker")
		release()
		require.NoError(t, <-done)
		require.NoError(t, <-scanDone)
		assert.EqualValues(t, 1, p.Stats().SpareSteps)
	})
}

// With only point reads live, the workers batch them; the spare sleeps.
func TestSpare_NotWithOnlyPointReadsLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, LongStep: time.Hour})
		synctest.Wait()
		ch := make(chan struct{})
		blocker, blockerDone, started := blockingTask(ch)
		require.NoError(t, p.Go(context.Background(), blocker, SpawnOptions{Short: true}))
		<-started
		task, done := readyTask()
		require.NoError(t, p.Go(context.Background(), task, SpawnOptions{Short: true}))
		synctest.Wait()
		st := p.Stats()
		assert.Equal(t, 1, st.Queued, "waits for the worker")
		assert.Zero(t, st.SpareSteps)
		close(ch)
		require.NoError(t, <-blockerDone)
		require.NoError(t, <-done)
		assert.Zero(t, p.Stats().SpareSteps)
	})
}

// A spare takes nothing while a worker is parked: the worker is woken.
func TestSpare_OnlyWhenNoWorkerIsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 2})
		// A scan waiting for its consumer: live, so a spare may be woken.
		scan, _ := doneTask(func(*StepContext) Status { return Pending })
		_, err := p.Spawn(context.Background(), scan, SpawnOptions{})
		require.NoError(t, err)
		synctest.Wait()
		for range 10 {
			task, done := readyTask()
			_, err := p.Spawn(context.Background(), task, SpawnOptions{Short: true})
			require.NoError(t, err)
			require.NoError(t, <-done)
			synctest.Wait()
		}
		assert.Zero(t, p.Stats().SpareSteps)
	})
}

// A task a spare stepped that goes on is queued like any other: it may have
// left level 0, and a worker, not the spare, runs it then.
func TestSpare_AYieldingTaskGoesBackToTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, LongStep: time.Hour, TimeSlice: time.Millisecond})
		release := holdTheWorker(t, p)

		steps := 0
		task, done := doneTask(func(sc *StepContext) Status {
			steps++
			if steps == 1 {
				time.Sleep(6 * time.Millisecond) // past level 0's 5 ms
				return Yield
			}
			return Ready
		})
		_, err := p.Spawn(context.Background(), task, SpawnOptions{Short: true}) // a point read that went on
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond) // past its first step
		synctest.Wait()
		st := p.Stats()
		assert.EqualValues(t, 1, st.SpareSteps, "its level-0 step")
		assert.Equal(t, 1, st.Queued, "now on level 1, for the worker")
		release()
		require.NoError(t, <-done)
		assert.Equal(t, 2, steps)
		assert.EqualValues(t, 1, p.Stats().SpareSteps)
	})
}

func TestSpare_NoneForQueuesWithoutAnUrgentClass(t *testing.T) {
	assert.Zero(t, newPool(t, Options{Workers: 1, Queue: NewFIFO()}).Stats().Spares, "FIFO stays the plain baseline")
	assert.Zero(t, newPool(t, Options{Workers: 1, Spares: -1}).Stats().Spares)
	assert.Equal(t, 2, newPool(t, Options{Workers: 1, Spares: 2}).Stats().Spares)
}

// Close wakes sleeping spares and waits for running ones; goleak in
// TestMain checks that none outlives it.
func TestSpare_CloseEndsSpares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Options{Workers: 1, Spares: 2, LongStep: time.Hour})
		require.NoError(t, err)
		synctest.Wait() // the worker and the spare asleep: the blocker goes to the worker
		release := make(chan struct{})
		blocker, blockerDone, started := blockingTask(release)
		_, err = p.Spawn(context.Background(), blocker, SpawnOptions{})
		require.NoError(t, err)
		<-started
		spareRelease := make(chan struct{})
		onSpare, onSpareDone, spareStarted := blockingTask(spareRelease)
		_, err = p.Spawn(context.Background(), onSpare, SpawnOptions{Short: true})
		require.NoError(t, err)
		<-spareStarted // one spare steps, the other sleeps

		closed := make(chan error)
		go func() { closed <- p.Close() }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a spare's step ran")
		default:
		}
		close(release)
		close(spareRelease)
		require.NoError(t, <-closed)
		require.NoError(t, <-blockerDone)
		require.NoError(t, <-onSpareDone)
		synctest.Wait()
	})
}

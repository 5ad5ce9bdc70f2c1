package readpool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdQueue is a FIFO that holds the first entry of group "held" back for
// delay, as resource control holds a throttled group's tasks.
type holdQueue struct {
	*FIFO
	delay time.Duration
	held  EntryHeap // by the pool time the entry becomes ready
}

func (q *holdQueue) MayInline(e *Entry) bool { return e.Group != "held" && q.FIFO.MayInline(e) }

func (q *holdQueue) Push(e *Entry, now time.Duration) {
	if e.Group == "held" && e.Elapsed == 0 {
		e.Key = uint64(now + q.delay)
		q.held.Push(e)
		return
	}
	q.FIFO.Push(e, now)
}

func (q *holdQueue) Pop(now time.Duration) *Entry {
	for e := q.held.Min(); e != nil && time.Duration(e.Key) <= now; e = q.held.Min() {
		q.held.Remove(e)
		q.FIFO.Push(e, now)
	}
	return q.FIFO.Pop(now)
}

func (q *holdQueue) Remove(e *Entry) bool { return e.Unlink() }

func (q *holdQueue) Held() (int, time.Duration) {
	if e := q.held.Min(); e != nil {
		return q.held.Len(), time.Duration(e.Key)
	}
	return 0, 0
}

func TestHeld_RunsWhenItsTimeComesWithoutAWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &holdQueue{FIFO: NewFIFO(), delay: 50 * time.Millisecond}
		p := newPool(t, Options{Workers: 1, MaxTasks: 1, Queue: q})
		start := time.Now()
		var ranAt atomic.Int64
		held, heldDone := doneTask(func(*StepContext) Status {
			ranAt.Store(int64(time.Since(start)))
			return Ready
		})
		_, err := p.Spawn(context.Background(), held, SpawnOptions{Group: "held"})
		require.NoError(t, err)
		synctest.Wait()
		st := p.Stats()
		assert.Equal(t, 1, st.Held)
		assert.Zero(t, st.Queued)
		assert.Zero(t, st.Busy, "a held task occupies no worker")
		assert.Equal(t, 1, st.Parked)

		// It takes no room either: MaxTasks 1 still admits a task, which runs
		// at once beside it.
		other, otherDone := readyTask()
		_, err = p.Spawn(context.Background(), other, SpawnOptions{})
		require.NoError(t, err)
		require.NoError(t, <-otherDone)
		assert.Zero(t, ranAt.Load(), "not before its time")

		require.NoError(t, <-heldDone)
		assert.Equal(t, 50*time.Millisecond, time.Duration(ranAt.Load()), "at its time, by the pool's timer")
		assert.Zero(t, p.Stats().Held)
	})
}

func TestHeld_ContextEndsWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &holdQueue{FIFO: NewFIFO(), delay: time.Hour}
		p := newPool(t, Options{Workers: 1, Queue: q})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		var stepped atomic.Bool
		task, done := doneTask(func(*StepContext) Status { stepped.Store(true); return Ready })
		_, err := p.Spawn(ctx, task, SpawnOptions{Group: "held"})
		require.NoError(t, err)
		start := time.Now()
		assert.ErrorIs(t, <-done, context.DeadlineExceeded)
		assert.Equal(t, 10*time.Millisecond, time.Since(start), "at its deadline, not when released")
		assert.False(t, stepped.Load())
		st := p.Stats()
		assert.Zero(t, st.Held)
		assert.EqualValues(t, 1, st.Dropped)
	})
}

func TestHeld_CloseEndsHeldTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &holdQueue{FIFO: NewFIFO(), delay: time.Hour}
		p, err := New(Options{Workers: 1, Queue: q})
		require.NoError(t, err)
		task, done := doneTask(func(*StepContext) Status { return Ready })
		_, err = p.Spawn(context.Background(), task, SpawnOptions{Group: "held"})
		require.NoError(t, err)
		require.NoError(t, p.Close())
		assert.ErrorIs(t, <-done, ErrClosed)
	})
}

// A saturated pool: one worker stuck in a step, tasks with deadlines queued
// behind it. Each ends at its deadline, without a worker, and is dropped
// from the queue.
func TestDeadline_HoldsWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, q := range []Queue{NewMLFQ(MLFQOptions{}), NewFIFO(), NewPriorityQueue(nil)} {
			p := newPool(t, Options{Workers: 1, Queue: q, TimeSlice: time.Second, Spares: -1}) // no spare: the pool is saturated
			release := make(chan struct{})
			blocker, blockerDone, started := blockingTask(release)
			_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
			require.NoError(t, err)
			<-started

			const n = 300
			var stepped atomic.Int64
			dones := make([]chan error, n)
			start := time.Now()
			for i := range n {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				var task *funcTask
				task, dones[i] = doneTask(func(*StepContext) Status { stepped.Add(1); return Ready })
				_, err := p.Spawn(ctx, task, SpawnOptions{Inline: i%2 == 0})
				require.NoError(t, err)
			}
			require.Equal(t, n, p.Stats().Queued)
			for i := range n {
				assert.ErrorIs(t, <-dones[i], context.DeadlineExceeded)
			}
			assert.Equal(t, 10*time.Millisecond, time.Since(start), "at the deadline, the worker still stuck")
			st := p.Stats()
			assert.EqualValues(t, n, st.Dropped, q.Stats().Kind)
			assert.Zero(t, st.Queued)
			assert.Zero(t, stepped.Load())
			close(release)
			require.NoError(t, <-blockerDone)
		}
	})
}

func TestCancel_QueuedTaskFreesItsRoom(t *testing.T) {
	p := newPool(t, Options{Workers: 1, MaxTasks: 2})
	release := make(chan struct{})
	blocker, blockerDone, started := blockingTask(release)
	_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
	require.NoError(t, err)
	<-started
	queued, queuedDone := readyTask()
	h, err := p.Spawn(context.Background(), queued, SpawnOptions{})
	require.NoError(t, err)
	extra, _ := readyTask()
	_, err = p.Spawn(context.Background(), extra, SpawnOptions{})
	require.ErrorIs(t, err, ErrBusy, "one running, one queued: full")

	stop := errors.New("stop")
	h.Cancel(stop)
	assert.ErrorIs(t, <-queuedDone, stop)
	again, againDone := readyTask()
	_, err = p.Spawn(context.Background(), again, SpawnOptions{})
	require.NoError(t, err, "the cancelled task left the queue and its room")
	close(release)
	require.NoError(t, <-blockerDone)
	require.NoError(t, <-againDone)
}

func TestInvariants_CompletedTwicePanics(t *testing.T) {
	if !invariants {
		t.Skip("invariant checks are compiled in under -race or -tags invariants")
	}
	p := newPool(t, Options{Workers: 1})
	h := &Handle{p: p}
	p.inv.accept()
	checkOnce(h)
	assert.Panics(t, func() { checkOnce(h) })
}

// gateQueue is a FIFO that admits no task of group "no".
type gateQueue struct{ *FIFO }

func (q gateQueue) Admit(e *Entry, maxTasks int) bool { return e.Group != "no" && q.Len() < maxTasks }

func TestAdmitter_GatesInsteadOfMaxTasks(t *testing.T) {
	p := newPool(t, Options{Workers: 1, MaxTasks: 1, Queue: gateQueue{NewFIFO()}})
	release := make(chan struct{})
	blocker, blockerDone, started := blockingTask(release)
	_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
	require.NoError(t, err)
	<-started
	task, _ := readyTask()
	_, err = p.Spawn(context.Background(), task, SpawnOptions{Group: "no"})
	assert.ErrorIs(t, err, ErrBusy)
	queued, queuedDone := readyTask()
	_, err = p.Spawn(context.Background(), queued, SpawnOptions{Group: "yes"})
	assert.NoError(t, err, "the queue's gate, not running+queued >= MaxTasks, decides")
	close(release)
	require.NoError(t, <-blockerDone)
	require.NoError(t, <-queuedDone)
	assert.EqualValues(t, 1, p.Stats().RejectedBusy)
}

func TestAccountant_FirstStepFlaggedOnce(t *testing.T) {
	acct := &firstCounter{}
	p := newPool(t, Options{Workers: 1, Accountant: acct})
	var steps int
	task, done := doneTask(func(*StepContext) Status {
		steps++
		if steps < 3 {
			return Yield
		}
		return Ready
	})
	require.NoError(t, p.Go(context.Background(), task, SpawnOptions{Inline: true}))
	require.NoError(t, <-done)
	assert.EqualValues(t, 3, acct.steps.Load())
	assert.EqualValues(t, 1, acct.first.Load())
}

type firstCounter struct{ steps, first atomic.Int64 }

func (a *firstCounter) Charge(_ *Entry, u Usage) {
	a.steps.Add(1)
	if u.First {
		a.first.Add(1)
	}
}

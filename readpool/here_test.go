package readpool

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spawnWaiting spawns a task whose first step returns Pending and whose
// later steps run next, and returns its Done channel and its Waker once
// that first step has handed it out (the task is then being filed as
// waiting: the caller waits for the pool to settle).
func spawnWaiting(t *testing.T, p *Pool, next func(sc *StepContext) Status) (chan error, Waker) {
	t.Helper()
	wakers := make(chan Waker, 1)
	var steps atomic.Int32
	task, done := doneTask(func(sc *StepContext) Status {
		if steps.Add(1) == 1 {
			wakers <- sc.Waker()
			return Pending
		}
		return next(sc)
	})
	_, err := p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	return done, <-wakers
}

func TestStepHere_StepsAWaitingTaskOnTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 2})
		var ran atomic.Int32
		done, w := spawnWaiting(t, p, func(sc *StepContext) Status {
			if ran.Add(1) == 1 {
				return Pending
			}
			return Ready
		})
		synctest.Wait() // filed as waiting, both workers parked
		require.Equal(t, 1, p.Stats().Pending)

		require.True(t, w.StepHere())
		assert.EqualValues(t, 1, ran.Load(), "the step ran before StepHere returned: no worker was woken for it")
		st := p.Stats()
		assert.EqualValues(t, 1, st.SteppedHere)
		assert.EqualValues(t, 1, st.Wakes)
		assert.Equal(t, 2, st.Parked, "the borrowed slot went back, the workers slept on")
		assert.Equal(t, 1, st.Pending, "it returned Pending again and waits as a worker's step would leave it")
		assert.Zero(t, st.Running)

		// The waker is the task's, not the wait's: it steps it again.
		require.True(t, w.StepHere())
		require.NoError(t, <-done)
		assert.EqualValues(t, 2, ran.Load())
		assert.EqualValues(t, 2, p.Stats().SteppedHere)
		assert.False(t, w.StepHere(), "an ended task's waker does nothing")
	})
}

func TestStepHere_FinishesTheTaskAndEndsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1})
		done, w := spawnWaiting(t, p, func(*StepContext) Status { return Ready })
		synctest.Wait()
		require.True(t, w.StepHere())
		select {
		case err := <-done:
			require.NoError(t, err, "Done ran on the caller, within StepHere")
		default:
			t.Fatal("the task did not end within StepHere")
		}
		st := p.Stats()
		assert.EqualValues(t, 1, st.SteppedHere)
		assert.Zero(t, st.Pending)
		assert.Zero(t, st.Running)
		assert.EqualValues(t, 1, st.Completed)
		assert.False(t, w.StepHere(), "an ended task's waker does nothing")
	})
}

func TestStepHere_NotWhileEveryWorkerIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		p := newPool(t, Options{Workers: 1, LongStep: time.Hour})
		done, w := spawnWaiting(t, p, func(*StepContext) Status { return Ready })
		settleIdle(t, p)
		blocker, blockerDone, started := blockingTask(release)
		_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
		require.NoError(t, err)
		<-started

		assert.False(t, w.StepHere(), "no slot is free: stepping here would make two steps on one worker's share")
		assert.Equal(t, 1, p.Stats().Pending, "still waiting, untouched")
		w.Wake() // what the caller does then
		close(release)
		require.NoError(t, <-blockerDone)
		require.NoError(t, <-done)
		assert.Zero(t, p.Stats().SteppedHere)
	})
}

// holdAll holds every entry pushed while hold is set, for delay, as a
// throttled resource group's tasks are held.
type holdAll struct {
	holdQueue
	hold atomic.Bool
}

func (q *holdAll) Push(e *Entry, now time.Duration) {
	if q.hold.Load() {
		e.Key = uint64(now + q.delay)
		q.held.Push(e)
		return
	}
	q.FIFO.Push(e, now)
}

func TestStepHere_TheQueueMayHoldTheTaskBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &holdAll{holdQueue: holdQueue{FIFO: NewFIFO(), delay: 10 * time.Millisecond}}
		p := newPool(t, Options{Workers: 1, Queue: q})
		start := time.Now()
		var ranAt atomic.Int64
		done, w := spawnWaiting(t, p, func(*StepContext) Status {
			ranAt.Store(int64(time.Since(start)))
			return Ready
		})
		synctest.Wait()
		q.hold.Store(true)

		assert.True(t, w.StepHere(), "the wake is taken: the task is queued, and held")
		assert.Zero(t, ranAt.Load(), "not stepped: the queue holds it back")
		st := p.Stats()
		assert.Equal(t, 1, st.Held)
		assert.Zero(t, st.Pending)
		assert.Zero(t, st.SteppedHere)
		require.NoError(t, <-done)
		assert.Equal(t, 10*time.Millisecond, time.Duration(ranAt.Load()), "released at its time, on a worker")
	})
}

func TestStepHere_CancelledDuringItsStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1})
		boom := errors.New("cancelled from within")
		done, w := spawnWaiting(t, p, func(sc *StepContext) Status {
			sc.Handle().Cancel(boom)
			return Yield // would go on; the cancel ends it instead
		})
		synctest.Wait()
		require.True(t, w.StepHere())
		select {
		case err := <-done:
			assert.ErrorIs(t, err, boom)
		default:
			t.Fatal("a cancel seen at the end of the step here ends the task there")
		}
		st := p.Stats()
		assert.Zero(t, st.Queued)
		assert.EqualValues(t, 1, st.Cancelled)
	})
}

func TestStepHere_NotAheadOfAHeldTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &holdAll{holdQueue: holdQueue{FIFO: NewFIFO(), delay: 10 * time.Millisecond}}
		p := newPool(t, Options{Workers: 1, Queue: q})
		var stepped atomic.Bool
		done, w := spawnWaiting(t, p, func(*StepContext) Status { stepped.Store(true); return Ready })
		synctest.Wait()
		q.hold.Store(true)
		other, otherDone := readyTask()
		_, err := p.Spawn(context.Background(), other, SpawnOptions{})
		require.NoError(t, err)
		q.hold.Store(false)
		require.Equal(t, 1, p.Stats().Held)
		require.Equal(t, 1, p.Stats().Parked)

		// A worker is free, but the held task may become ready first.
		assert.False(t, w.StepHere())
		assert.False(t, stepped.Load())
		assert.Equal(t, 1, p.Stats().Pending)
		w.Wake()
		require.NoError(t, <-done)
		require.NoError(t, <-otherDone)
		assert.Zero(t, p.Stats().SteppedHere)
	})
}

// Consumers stepping their tasks here race with wakes, cancels and Close:
// every task still ends exactly once (the self-checks under -race count),
// none is lost, and Close leaves nothing behind.
func TestStepHere_RacesWithWakesCancelsAndClose(t *testing.T) {
	const tasks = 200
	p, err := New(Options{Workers: 2})
	require.NoError(t, err)
	type entry struct {
		h      *Handle
		waker  atomic.Pointer[Waker]
		steps  atomic.Int32
		doneN  atomic.Int32
		doneCh chan error
		need   int32
	}
	es := make([]*entry, tasks)
	for i := range es {
		// Some finish before Close, the others are ended by it.
		e := &entry{doneCh: make(chan error, 1), need: int32(10 + 2*i)}
		es[i] = e
		task := &funcTask{
			step: func(sc *StepContext) Status {
				w := sc.Waker()
				e.waker.Store(&w)
				if e.steps.Add(1) >= e.need {
					return Ready
				}
				return Pending
			},
			done: func(err error) {
				e.doneN.Add(1)
				e.doneCh <- err
			},
		}
		e.h, err = p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				runtime.Gosched() // the workers need the CPU too
				e := es[r.IntN(tasks)]
				w := e.waker.Load()
				if w == nil {
					continue
				}
				switch n := r.IntN(1000); {
				case n < 2:
					e.h.Cancel(nil)
				case n < 100:
					w.Wake()
				default:
					if !w.StepHere() {
						w.Wake()
					}
				}
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, p.Close())
	close(stop)
	wg.Wait()
	var finished, ended int
	for _, e := range es {
		require.EqualValues(t, 1, e.doneN.Load(), "every task ends exactly once")
		switch err := <-e.doneCh; {
		case err == nil:
			finished++
			assert.GreaterOrEqual(t, e.steps.Load(), e.need)
		default:
			ended++
			assert.True(t, errors.Is(err, context.Canceled) || errors.Is(err, ErrClosed), "%v", err)
		}
	}
	t.Logf("%d finished, %d cancelled or closed, %d steps here", finished, ended, p.Stats().SteppedHere)
	assert.Positive(t, p.Stats().SteppedHere)
}

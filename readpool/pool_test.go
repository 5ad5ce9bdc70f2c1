package readpool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newPool(t *testing.T, opts Options) *Pool {
	t.Helper()
	p, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

func readyTask() (*funcTask, chan error) {
	return doneTask(func(*StepContext) Status { return Ready })
}

// blockingTask blocks in its first step until release is closed.
func blockingTask(release <-chan struct{}) (*funcTask, chan error, chan struct{}) {
	started := make(chan struct{})
	task, done := doneTask(func(*StepContext) Status {
		close(started)
		<-release
		return Ready
	})
	return task, done, started
}

func TestNew_ValidateReportsEveryProblem(t *testing.T) {
	_, err := New(Options{Workers: -1, MaxTasks: -2, TimeSlice: -1, Budget: -1, LongStep: -1})
	require.Error(t, err)
	for _, field := range []string{"Workers", "MaxTasks", "TimeSlice", "Budget", "LongStep"} {
		assert.Contains(t, err.Error(), field)
	}
}

func TestNew_Defaults(t *testing.T) {
	p := newPool(t, Options{})
	o := p.Options()
	assert.Equal(t, time.Millisecond, o.TimeSlice)
	assert.Equal(t, 128, o.Budget)
	assert.Equal(t, 20*time.Millisecond, o.LongStep)
	assert.Equal(t, o.Workers*2000, o.MaxTasks)
	assert.Equal(t, "mlfq", p.Stats().Queue.Kind)
}

func TestSpawn_RunsToCompletionWithYields(t *testing.T) {
	p := newPool(t, Options{Workers: 2, Budget: 4, TimeSlice: time.Hour}) // only the budget ends steps
	var units atomic.Int64
	task, done := doneTask(func(sc *StepContext) Status {
		for !sc.ShouldYield() {
			if units.Add(1) == 100 {
				return Ready
			}
		}
		return Yield
	})
	h, err := p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	require.NoError(t, <-done)
	assert.EqualValues(t, 100, units.Load())
	st := h.Stats()
	assert.Equal(t, 25, st.Steps, "a budget of 4 units per step")
	assert.Equal(t, 24, st.Yields)
}

func TestShouldYield_TimeSlice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, TimeSlice: 10 * time.Millisecond, Budget: 1 << 30})
		var perStep []int
		var mu sync.Mutex
		task, done := doneTask(func(sc *StepContext) Status {
			n := 0
			for !sc.ShouldYield() {
				n++
				time.Sleep(time.Millisecond) // one unit of fake work
			}
			mu.Lock()
			perStep = append(perStep, n)
			mu.Unlock()
			if len(perStep) == 3 {
				return Ready
			}
			return Yield
		})
		_, err := p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
		require.NoError(t, <-done)
		// Asked before each unit: ten 1 ms units fit a 10 ms slice, and the
		// eleventh is refused before it runs.
		assert.Equal(t, []int{10, 10, 10}, perStep)
	})
}

func TestSpawn_ErrBusyAtMaxTasks(t *testing.T) {
	release := make(chan struct{})
	p := newPool(t, Options{Workers: 1, MaxTasks: 3})
	blocker, blockerDone, started := blockingTask(release)
	_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
	require.NoError(t, err)
	<-started
	var dones []chan error
	for range 2 {
		task, done := readyTask()
		_, err := p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
		dones = append(dones, done)
	}
	task, _ := readyTask()
	_, err = p.Spawn(context.Background(), task, SpawnOptions{})
	assert.ErrorIs(t, err, ErrBusy)
	assert.EqualValues(t, 1, p.Stats().RejectedBusy)
	close(release)
	require.NoError(t, <-blockerDone)
	for _, d := range dones {
		require.NoError(t, <-d)
	}
	task, done := readyTask()
	_, err = p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err, "room again once tasks completed")
	require.NoError(t, <-done)
}

func TestSpawn_PendingTasksDoNotCountAgainstMaxTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, MaxTasks: 2})
		var handles []*Handle
		var dones []chan error
		for range 10 {
			var woken atomic.Bool
			task, done := doneTask(func(*StepContext) Status {
				if woken.Load() {
					return Ready
				}
				woken.Store(true)
				return Pending
			})
			h, err := p.Spawn(context.Background(), task, SpawnOptions{})
			require.NoError(t, err)
			handles = append(handles, h)
			dones = append(dones, done)
			synctest.Wait() // the step ran and the pool filed the task
			require.Equal(t, 1, h.Stats().Pendings)
		}
		assert.Equal(t, 10, p.Stats().Pending)
		for i, h := range handles {
			h.Wake()
			require.NoError(t, <-dones[i])
		}
	})
}

func TestSpawn_ContextDoneBeforeFirstStep(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stepped atomic.Bool
	task, done := doneTask(func(*StepContext) Status { stepped.Store(true); return Ready })
	_, err := p.Spawn(ctx, task, SpawnOptions{})
	require.NoError(t, err)
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.False(t, stepped.Load())
	assert.EqualValues(t, 1, p.Stats().Cancelled)
}

func TestSpawn_ContextCancelledWhileQueued(t *testing.T) {
	release := make(chan struct{})
	p := newPool(t, Options{Workers: 1})
	blocker, blockerDone, started := blockingTask(release)
	_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
	require.NoError(t, err)
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	var stepped atomic.Bool
	task, done := doneTask(func(*StepContext) Status { stepped.Store(true); return Ready })
	_, err = p.Spawn(ctx, task, SpawnOptions{})
	require.NoError(t, err)
	cancel()
	close(release)
	require.NoError(t, <-blockerDone)
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.False(t, stepped.Load(), "dropped without running")
}

func TestSpawn_CancelledMidwayStopsAtStepBoundary(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	ctx, cancel := context.WithCancel(context.Background())
	var steps atomic.Int32
	var released atomic.Bool
	task := &funcTask{step: func(*StepContext) Status {
		if steps.Add(1) == 3 {
			cancel() // during the third step
		}
		return Yield
	}}
	done := make(chan error, 1)
	task.done = func(err error) { released.Store(true); done <- err }
	_, err := p.Spawn(ctx, task, SpawnOptions{})
	require.NoError(t, err)
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.EqualValues(t, 3, steps.Load(), "no step after the one that saw the cancel")
	assert.True(t, released.Load())
}

func TestSpawn_ContextCancelledWhilePending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1})
		ctx, cancel := context.WithTimeoutCause(context.Background(), time.Hour, errors.New("unused"))
		defer cancel()
		task, done := doneTask(func(*StepContext) Status { return Pending })
		h, err := p.Spawn(ctx, task, SpawnOptions{})
		require.NoError(t, err)
		synctest.Wait() // the task is filed as waiting
		require.Equal(t, 1, p.Stats().Pending)
		cancel() // nobody wakes the task: the pool must notice the context
		assert.ErrorIs(t, <-done, context.Canceled)
		assert.Equal(t, 1, h.Stats().Steps)
		assert.Zero(t, p.Stats().Pending)
	})
}

func TestHandle_CancelQueuedAndPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		p := newPool(t, Options{Workers: 1})
		blocker, blockerDone, started := blockingTask(release)
		_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
		require.NoError(t, err)
		<-started

		queued, queuedDone := readyTask()
		hq, err := p.Spawn(context.Background(), queued, SpawnOptions{})
		require.NoError(t, err)
		myErr := errors.New("iterator closed")
		hq.Cancel(myErr)
		assert.ErrorIs(t, <-queuedDone, myErr, "completed at once on the canceller's goroutine")
		close(release)
		require.NoError(t, <-blockerDone)

		pending, pendingDone := doneTask(func(*StepContext) Status { return Pending })
		hp, err := p.Spawn(context.Background(), pending, SpawnOptions{})
		require.NoError(t, err)
		synctest.Wait() // the task is filed as waiting
		require.Equal(t, 1, hp.Stats().Pendings)
		hp.Cancel(nil)
		assert.ErrorIs(t, <-pendingDone, context.Canceled)
		assert.Equal(t, 1, hp.Stats().Steps)
	})
}

func TestSpawn_PanicIsRecovered(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	task, done := doneTask(func(*StepContext) Status { panic("boom") })
	_, err := p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	err = <-done
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "boom", pe.Value)
	assert.Contains(t, string(pe.Stack), "readpool.TestSpawn_PanicIsRecovered")
	assert.True(t, strings.HasPrefix(err.Error(), "readpool: task panicked: boom"))

	// The worker lives on.
	task2, done2 := readyTask()
	_, err = p.Spawn(context.Background(), task2, SpawnOptions{})
	require.NoError(t, err)
	require.NoError(t, <-done2)
	assert.EqualValues(t, 1, p.Stats().Panicked)

	wrapped := &PanicError{Value: context.DeadlineExceeded}
	assert.ErrorIs(t, wrapped, context.DeadlineExceeded)
}

func TestSpawn_InlineRunsOnCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 2})
		synctest.Wait() // both workers parked
		var completed atomic.Bool
		task := &funcTask{step: func(*StepContext) Status { return Ready }, done: func(error) { completed.Store(true) }}
		_, err := p.Spawn(context.Background(), task, SpawnOptions{Inline: true})
		require.NoError(t, err)
		assert.True(t, completed.Load(), "the first (and only) step ran before Spawn returned")
		st := p.Stats()
		assert.EqualValues(t, 1, st.Inline)
		assert.Equal(t, 2, st.Parked, "the borrowed slot went back")

		// A task that yields goes on on the workers.
		var steps atomic.Int32
		task2, done2 := doneTask(func(*StepContext) Status {
			if steps.Add(1) == 3 {
				return Ready
			}
			return Yield
		})
		_, err = p.Spawn(context.Background(), task2, SpawnOptions{Inline: true})
		require.NoError(t, err)
		require.NoError(t, <-done2)
		assert.EqualValues(t, 3, steps.Load())
		assert.EqualValues(t, 2, p.Stats().Inline)
	})
}

func TestSpawn_InlineNotWhenQueued(t *testing.T) {
	release := make(chan struct{})
	p := newPool(t, Options{Workers: 1})
	blocker, blockerDone, started := blockingTask(release)
	_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
	require.NoError(t, err)
	<-started
	task, done := readyTask()
	_, err = p.Spawn(context.Background(), task, SpawnOptions{Inline: true})
	require.NoError(t, err)
	select {
	case <-done:
		t.Fatal("ran inline although no slot was free")
	default:
	}
	close(release)
	require.NoError(t, <-blockerDone)
	require.NoError(t, <-done)
	assert.Zero(t, p.Stats().Inline)
}

func TestPool_CloseWithQueuedRunningAndPendingTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Options{Workers: 2, Spares: -1}) // no spare: one task stays queued
		require.NoError(t, err)

		pending, pendingDone := doneTask(func(*StepContext) Status { return Pending })
		hp, err := p.Spawn(context.Background(), pending, SpawnOptions{})
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 1, p.Stats().Pending)

		release := make(chan struct{})
		var runningDones []chan error
		for range 2 { // both workers busy
			running, done := doneTask(func(*StepContext) Status {
				<-release
				return Yield // it would go on, but the pool is closing
			})
			_, err = p.Spawn(context.Background(), running, SpawnOptions{})
			require.NoError(t, err)
			runningDones = append(runningDones, done)
		}
		synctest.Wait()
		queued, queuedDone := readyTask()
		_, err = p.Spawn(context.Background(), queued, SpawnOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, p.Stats().Queued)

		closed := make(chan struct{})
		go func() { assert.NoError(t, p.Close()); close(closed) }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while steps were running")
		default:
		}
		assert.ErrorIs(t, <-queuedDone, ErrClosed)
		assert.ErrorIs(t, <-pendingDone, ErrClosed)
		assert.Equal(t, 1, hp.Stats().Steps)

		_, err = p.Spawn(context.Background(), queued, SpawnOptions{})
		assert.ErrorIs(t, err, ErrClosed)

		close(release)
		<-closed
		for _, d := range runningDones {
			assert.ErrorIs(t, <-d, ErrClosed)
		}
		require.NoError(t, p.Close(), "idempotent")
	})
}

func TestPool_CloseEndsIdleTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 2})
		var dones []chan error
		var handles []*Handle
		for range 5 {
			task, done := doneTask(func(*StepContext) Status { return Pending })
			h, err := p.Spawn(context.Background(), task, SpawnOptions{})
			require.NoError(t, err)
			dones = append(dones, done)
			handles = append(handles, h)
		}
		synctest.Wait() // every task stepped and is filed as waiting
		require.Equal(t, 5, p.Stats().Pending)
		require.NoError(t, p.Close())
		for i, d := range dones {
			assert.ErrorIs(t, <-d, ErrClosed)
			handles[i].Wake() // no-op after completion
		}
	})
}

func TestPool_LongStepHandoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, Spares: -1}) // the extra worker, not a spare, runs them
		release := make(chan struct{})
		stuck, stuckDone, started := blockingTask(release)
		_, err := p.Spawn(context.Background(), stuck, SpawnOptions{})
		require.NoError(t, err)
		<-started

		var dones []chan error
		for range 5 {
			task, done := readyTask()
			_, err := p.Spawn(context.Background(), task, SpawnOptions{})
			require.NoError(t, err)
			dones = append(dones, done)
		}
		// The only worker is stuck; after LongStep (20 ms of fake time) an
		// extra worker runs the short tasks.
		for _, d := range dones {
			require.NoError(t, <-d)
		}
		st := p.Stats()
		assert.EqualValues(t, 1, st.LongSteps)
		assert.Equal(t, 1, st.Busy)
		close(release)
		require.NoError(t, <-stuckDone)
		synctest.Wait()
		assert.Zero(t, p.Stats().Extra, "extra workers leave once the stuck step returned")
	})
}

// TestMonitor_RunSleepsWhileIdleAndAsksForExtras runs the loop on
// synctest's clock: it calls onStuck once a step has run for longStep,
// and with no step running it sleeps (no check, no timer) until one starts.
func TestMonitor_RunSleepsWhileIdleAndAsksForExtras(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		epoch := time.Now()
		var stuckCalls atomic.Int64
		m := &monitor{}
		quit := make(chan struct{})
		m.init(testLongStep, newSlots(1).workers, quit, monitorEnv{
			now:     func() time.Duration { return time.Since(epoch) },
			onStuck: func() { stuckCalls.Add(1) },
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			m.run()
		}()
		time.Sleep(testLongStep) // past the first check
		synctest.Wait()
		assert.True(t, m.parked.Load(), "no step ran: asleep")

		s := m.slots[0]
		m.stepStarted(s, time.Since(epoch))
		time.Sleep(2 * testLongStep)
		synctest.Wait()
		assert.EqualValues(t, 1, m.longSteps.Load())
		assert.Positive(t, stuckCalls.Load(), "asked for extras while stuck")

		m.stepEnded(s)
		calls := stuckCalls.Load()
		time.Sleep(testLongStep)
		synctest.Wait()
		assert.Equal(t, calls, stuckCalls.Load(), "not once the step ended")
		assert.True(t, m.parked.Load(), "asleep again")
		close(quit)
		<-done
	})
}

func TestPool_MLFQShareOnWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		spawn := func(level int, step time.Duration) {
			task := &funcTask{step: func(sc *StepContext) Status {
				select {
				case <-stop:
					return Ready
				default:
				}
				time.Sleep(step)
				return Yield
			}}
			wg.Add(1)
			task.done = func(error) { wg.Done() }
			_, err := p.Spawn(context.Background(), task, SpawnOptions{Fixed: true, Level: level})
			require.NoError(t, err)
		}
		for range 3 {
			spawn(0, 50*time.Microsecond)
			spawn(1, 1500*time.Microsecond)
			spawn(2, 1500*time.Microsecond)
		}
		time.Sleep(10 * time.Second)
		close(stop)
		wg.Wait()
		assert.InDelta(t, 0.80, p.Stats().Queue.Level0Share, 0.05)
	})
}

type fakeAccountant struct {
	mu    sync.Mutex
	usage map[string]Usage
}

func (a *fakeAccountant) Charge(e *Entry, u Usage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	group := e.Group
	acc := a.usage[group]
	acc.Exec += u.Exec
	acc.Rows += u.Rows
	acc.Bytes += u.Bytes
	a.usage[group] = acc
}

func TestPool_AccountantChargedPerStep(t *testing.T) {
	acct := &fakeAccountant{usage: map[string]Usage{}}
	p := newPool(t, Options{Workers: 1, Accountant: acct, Queue: NewPriorityQueue(nil)})
	var steps atomic.Int32
	task, done := doneTask(func(sc *StepContext) Status {
		sc.Charge(10, 1000)
		if steps.Add(1) == 4 {
			return Ready
		}
		return Yield
	})
	h, err := p.Spawn(context.Background(), task, SpawnOptions{Group: "tenant-a"})
	require.NoError(t, err)
	require.NoError(t, <-done)
	acct.mu.Lock()
	defer acct.mu.Unlock()
	assert.EqualValues(t, 40, acct.usage["tenant-a"].Rows)
	assert.EqualValues(t, 4000, acct.usage["tenant-a"].Bytes)
	assert.EqualValues(t, 40, h.Stats().Rows)
	assert.Equal(t, "priority", p.Stats().Queue.Kind)
}

func TestPool_StatsJSON(t *testing.T) {
	p := newPool(t, Options{Workers: 2, Queue: NewFIFO()})
	for range 20 {
		task, done := readyTask()
		_, err := p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
		require.NoError(t, <-done)
	}
	st := p.Stats()
	assert.EqualValues(t, 20, st.Spawned)
	assert.EqualValues(t, 20, st.Completed)
	assert.EqualValues(t, 20, st.Steps)
	assert.EqualValues(t, 20, st.StepTime.Count)
	assert.Positive(t, st.StepTime.Sum)
	require.NotEmpty(t, st.StepTime.Buckets)
	last := st.StepTime.Buckets[len(st.StepTime.Buckets)-1]
	assert.EqualValues(t, 20, last.Count, "every step took less than 17 s")
	for i := 1; i < len(st.StepTime.Buckets); i++ {
		assert.LessOrEqual(t, st.StepTime.Buckets[i-1].Count, st.StepTime.Buckets[i].Count, "cumulative")
	}
	b, err := json.Marshal(st)
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(b, &back))
	for _, k := range []string{"workers", "busy", "parked", "extra", "queue", "spawned", "completed", "cancelled", "panicked", "rejected_busy", "yields", "pendings", "wakes", "long_steps", "queue_wait", "step_time"} {
		assert.Contains(t, back, k)
	}
	assert.Equal(t, "fifo", back["queue"].(map[string]any)["kind"])
}

func TestGo_RecyclesHandlesUnderLoad(t *testing.T) {
	p := newPool(t, Options{Workers: 2, MaxTasks: 64})
	var wg sync.WaitGroup
	var ran, busy atomic.Int64
	for range 4 {
		wg.Go(func() {
			for i := range 2000 {
				var steps int
				task := &funcTask{step: func(*StepContext) Status {
					steps++
					if steps < 1+i%3 {
						return Yield
					}
					ran.Add(1)
					return Ready
				}}
				done := make(chan struct{})
				task.done = func(error) { close(done) }
				if err := p.Go(context.Background(), task, SpawnOptions{Inline: i%2 == 0}); err != nil {
					require.ErrorIs(t, err, ErrBusy)
					busy.Add(1)
					continue
				}
				<-done
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 8000, int(ran.Load()+busy.Load()))
	st := p.Stats()
	assert.EqualValues(t, ran.Load(), st.Completed)
	assert.EqualValues(t, ran.Load(), st.Spawned)
}

func TestShouldYield_PreemptedByLevel0Work(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// No spare: the level-0 task must wait for the worker to give way.
		p := newPool(t, Options{Workers: 1, TimeSlice: 10 * time.Millisecond, Spares: -1})
		var units []int
		var mu sync.Mutex
		stop := make(chan struct{})
		long, longDone := doneTask(func(sc *StepContext) Status {
			n := 0
			for !sc.ShouldYield() {
				select {
				case <-stop:
					return Ready
				default:
				}
				n++
				time.Sleep(time.Millisecond)
			}
			mu.Lock()
			units = append(units, n)
			mu.Unlock()
			return Yield
		})
		_, err := p.Spawn(context.Background(), long, SpawnOptions{Fixed: true, Level: 1})
		require.NoError(t, err)
		time.Sleep(25 * time.Millisecond) // two whole steps, in the third
		synctest.Wait()

		short, shortDone := readyTask()
		h, err := p.Spawn(context.Background(), short, SpawnOptions{})
		require.NoError(t, err)
		require.NoError(t, <-shortDone)
		// The level-1 step ends at its next unit (1 ms), not its slice.
		assert.LessOrEqual(t, h.Stats().WaitTime, time.Millisecond)
		assert.EqualValues(t, 1, p.Stats().Preempted)
		close(stop)
		require.NoError(t, <-longDone)
		mu.Lock()
		defer mu.Unlock()
		require.GreaterOrEqual(t, len(units), 3)
		assert.Equal(t, []int{10, 10}, units[:2], "whole slices while nothing waited")
		assert.Less(t, units[2], 10, "cut short for the level-0 task")
	})
}

// TestPreempted_SaysWhenLevel0WorkWaits: a level-1 step that looks at
// Preempted in the middle of a unit sees false while nothing waits and
// true once a level-0 task is queued behind it, without a unit counted.
func TestPreempted_SaysWhenLevel0WorkWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, TimeSlice: time.Hour})
		looked := make(chan bool)
		next := make(chan struct{})
		long, longDone := doneTask(func(sc *StepContext) Status {
			for range 2 {
				<-next
				looked <- sc.Preempted()
			}
			return Ready
		})
		_, err := p.Spawn(context.Background(), long, SpawnOptions{Fixed: true, Level: 1})
		require.NoError(t, err)
		synctest.Wait()
		next <- struct{}{}
		assert.False(t, <-looked, "nothing waits")

		short, shortDone := readyTask()
		_, err = p.Spawn(context.Background(), short, SpawnOptions{})
		require.NoError(t, err)
		next <- struct{}{}
		assert.True(t, <-looked, "a level-0 task waits behind the step")
		require.NoError(t, <-longDone)
		require.NoError(t, <-shortDone)
		assert.Zero(t, p.Stats().Preempted, "Preempted counts nothing; ShouldYield does")
	})
}

func TestSliceUsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, TimeSlice: 10 * time.Millisecond})
		var before, after bool
		task, done := doneTask(func(sc *StepContext) Status {
			time.Sleep(9 * time.Millisecond) // part of a unit of fake work
			before = sc.sliceUsed()
			time.Sleep(time.Millisecond)
			after = sc.sliceUsed()
			return Ready
		})
		_, err := p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
		require.NoError(t, <-done)
		assert.False(t, before, "9 ms of a 10 ms slice")
		assert.True(t, after, "the slice is used")
	})
}

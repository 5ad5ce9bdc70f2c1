package readpool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// awaitedTask is a one-step task whose spawner says, through Waiting,
// whether it is blocked on Done.
type awaitedTask struct {
	funcTask
	waiting bool
	asked   atomic.Int32
}

func (t *awaitedTask) Waiting() bool { t.asked.Add(1); return t.waiting }

func TestCallerHandoff_OnlyWhenTheCompletionReadiedACaller(t *testing.T) {
	for _, tc := range []struct {
		name     string
		waiting  bool
		panics   bool
		handoffs int64
		asked    int32
	}{
		{"caller blocked", true, false, 1, 1},
		{"caller not blocked", false, false, 0, 1},
		{"step panicked", true, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// No gosched period: a gosched pays the debt uncounted (see
				// TestHandoff_After), and under -race on a loaded machine the
				// step alone could outlast a 100 µs period.
				p := newPool(t, Options{Workers: 1, goschedEvery: time.Hour})
				done := make(chan error, 1)
				task := &awaitedTask{waiting: tc.waiting}
				task.step = func(*StepContext) Status {
					if tc.panics {
						panic("boom")
					}
					return Ready
				}
				task.done = func(err error) { done <- err }
				// Not Inline: the step runs on the worker, which is where a
				// hand-off can happen.
				require.NoError(t, p.Go(context.Background(), task, SpawnOptions{}))
				err := <-done
				if tc.panics {
					require.Error(t, err)
				} else {
					require.NoError(t, err)
				}
				settleIdle(t, p)
				assert.Equal(t, tc.handoffs, p.Stats().CallerHandoffs)
				assert.Equal(t, tc.asked, task.asked.Load(), "Waiting is asked once, before Done, of a task that finished")
			})
		})
	}
}

func TestCallerHandoff_NotForTasksThatAreNotAwaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1})
		for range 10 {
			task, done := readyTask()
			require.NoError(t, p.Go(context.Background(), task, SpawnOptions{}))
			require.NoError(t, <-done)
		}
		settleIdle(t, p)
		assert.Zero(t, p.Stats().CallerHandoffs)
	})
}

func TestCallerHandoff_NotForInlineSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1})
		synctest.Wait() // the worker parked: its slot is free for the caller
		require.Equal(t, 1, p.Stats().Parked)
		task := &awaitedTask{waiting: true}
		task.step = func(*StepContext) Status { return Ready }
		done := make(chan error, 1)
		task.done = func(err error) { done <- err }
		require.NoError(t, p.Go(context.Background(), task, SpawnOptions{Inline: true}))
		require.NoError(t, <-done)
		s := p.Stats()
		require.EqualValues(t, 1, s.Inline, "the step ran on the caller")
		assert.Zero(t, s.CallerHandoffs, "the caller ran its own step: nobody to hand the P to")
	})
}

// settleIdle waits, in a synctest bubble, until the pool's goroutines are
// all blocked, and requires every worker parked then: the last step is
// filed and counted.
func settleIdle(t *testing.T, p *Pool) {
	t.Helper()
	synctest.Wait()
	s := p.Stats()
	require.Equal(t, s.Workers, s.Parked, "every worker parked")
	require.Zero(t, s.Running)
}

// TestCallerHandoff_DeferredOverPointReadsOnly: three point reads whose
// callers wait, queued behind one another on a single worker. With only
// point reads live, the worker steps all three before it gives up its P:
// one hand-off for three readied callers. With a scan live (a task that is
// not Short, waiting for a wake), each completion hands the P over at once.
func TestCallerHandoff_DeferredOverPointReadsOnly(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scanLive bool
		handoffs int64
	}{
		{"only point reads", false, 1},
		{"a scan is live", true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// An hour of delay, of gosched period and of LongStep: the
				// window never closes on its own, no gosched pays the debt
				// uncounted, and no extra or spare worker takes the queued
				// reads.
				p := newPool(t, Options{Workers: 1, LongStep: time.Hour, handoffDelay: time.Hour, goschedEvery: time.Hour, Spares: -1})
				if tc.scanLive {
					scan, _ := doneTask(func(*StepContext) Status { return Pending })
					_, err := p.Spawn(context.Background(), scan, SpawnOptions{})
					require.NoError(t, err)
				}
				settleIdle(t, p)

				gate, started := make(chan struct{}), make(chan struct{})
				done := make(chan error, 3)
				var tasks []*awaitedTask
				for i := range 3 {
					task := &awaitedTask{waiting: true}
					task.step = func(*StepContext) Status {
						if i == 0 {
							close(started)
							<-gate // hold the worker until the others are queued
						}
						return Ready
					}
					task.done = func(err error) { done <- err }
					tasks = append(tasks, task)
				}
				short := SpawnOptions{Short: true}
				require.NoError(t, p.Go(context.Background(), tasks[0], short))
				<-started
				require.NoError(t, p.Go(context.Background(), tasks[1], short))
				require.NoError(t, p.Go(context.Background(), tasks[2], short))
				close(gate)
				for range 3 {
					require.NoError(t, <-done)
				}
				settleIdle(t, p)
				for i, task := range tasks {
					assert.EqualValues(t, 1, task.asked.Load(), "task %d: Waiting asked once", i)
				}
				assert.Equal(t, tc.handoffs, p.Stats().CallerHandoffs, "hand-offs for three readied callers")
			})
		})
	}
}

// TestLongLive_CountsEveryNonShortTaskOutOnce: the count the hand-off rule
// reads (live tasks that are not point reads) goes back to zero however
// the tasks end — finished, cancelled while queued, context already done,
// panicked, waiting when the pool closes — and Short tasks never touch it.
func TestLongLive_CountsEveryNonShortTaskOutOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, LongStep: time.Hour})
		gate := make(chan struct{})
		blocker, blockerDone, started := blockingTask(gate)
		_, err := p.Spawn(context.Background(), blocker, SpawnOptions{})
		require.NoError(t, err)
		<-started

		var dones []chan error
		spawn := func(ctx context.Context, step func(*StepContext) Status, o SpawnOptions) *Handle {
			task, done := doneTask(step)
			h, err := p.Spawn(ctx, task, o)
			require.NoError(t, err)
			dones = append(dones, done)
			return h
		}
		ready := func(*StepContext) Status { return Ready }
		spawn(context.Background(), ready, SpawnOptions{})            // finishes
		spawn(context.Background(), ready, SpawnOptions{Short: true}) // a point read
		spawn(context.Background(), func(*StepContext) Status { panic("boom") }, SpawnOptions{})
		spawn(context.Background(), func(*StepContext) Status { return Pending }, SpawnOptions{}) // waits until Close
		spawn(context.Background(), ready, SpawnOptions{}).Cancel(nil)                            // cancelled while queued
		done, cancel := context.WithCancel(context.Background())
		cancel()
		spawn(done, ready, SpawnOptions{}) // context done at spawn
		// The cancelled and the already-done ones ended at once.
		assert.EqualValues(t, 4, p.longLive.Load(), "the blocker and three queued tasks that are not Short")

		close(gate)
		require.NoError(t, <-blockerDone)
		synctest.Wait() // the queued tasks ran; the worker parked
		require.Equal(t, 1, p.Stats().Pending)
		require.Equal(t, 1, p.Stats().Parked)
		spawn(context.Background(), ready, SpawnOptions{Inline: true}) // runs, and ends, on this goroutine
		require.EqualValues(t, 1, p.Stats().Inline)
		assert.EqualValues(t, 1, p.longLive.Load(), "only the waiting task is live")
		require.NoError(t, p.Close())
		for _, d := range dones {
			<-d
		}
		assert.Zero(t, p.longLive.Load())
	})
}

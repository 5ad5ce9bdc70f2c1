package readpool

import (
	"context"
	"sync/atomic"
	"testing"
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
			p := newPool(t, Options{Workers: 1})
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
			waitIdle(t, p)
			assert.Equal(t, tc.handoffs, p.Stats().CallerHandoffs)
			assert.Equal(t, tc.asked, task.asked.Load(), "Waiting is asked once, before Done, of a task that finished")
		})
	}
}

func TestCallerHandoff_NotForTasksThatAreNotAwaited(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	for range 10 {
		task, done := readyTask()
		require.NoError(t, p.Go(context.Background(), task, SpawnOptions{}))
		require.NoError(t, <-done)
	}
	waitIdle(t, p)
	assert.Zero(t, p.Stats().CallerHandoffs)
}

func TestCallerHandoff_NotForInlineSteps(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	require.Eventually(t, func() bool { return p.Stats().Parked == 1 }, 10*time.Second, time.Millisecond)
	task := &awaitedTask{waiting: true}
	task.step = func(*StepContext) Status { return Ready }
	done := make(chan error, 1)
	task.done = func(err error) { done <- err }
	require.NoError(t, p.Go(context.Background(), task, SpawnOptions{Inline: true}))
	require.NoError(t, <-done)
	s := p.Stats()
	require.EqualValues(t, 1, s.Inline, "the step ran on the caller")
	assert.Zero(t, s.CallerHandoffs, "the caller ran its own step: nobody to hand the P to")
}

// waitIdle waits until every worker has parked: the last step is filed and
// counted.
func waitIdle(t *testing.T, p *Pool) {
	t.Helper()
	require.Eventually(t, func() bool {
		s := p.Stats()
		return s.Parked == s.Workers && s.Running == 0
	}, 10*time.Second, time.Millisecond)
}

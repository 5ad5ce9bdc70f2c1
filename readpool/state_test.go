package readpool

import (
	"context"
	"flag"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var stormWakes = flag.Int("storm-wakes", 2000, "wakes per waker in TestState_WakeStorm")

// stormTask counts events (wakes its wakers announce) and steps. It returns
// Pending until a step has seen every event, so a lost wake leaves it
// waiting forever, and it detects two workers stepping it at once.
type stormTask struct {
	t        *testing.T
	events   atomic.Int64
	total    int64
	inStep   atomic.Bool
	steps    atomic.Int64
	lastSeen int64 // written only inside Step
	done     chan error
}

func (s *stormTask) Step(sc *StepContext) Status {
	if !s.inStep.CompareAndSwap(false, true) {
		s.t.Error("task stepped by two workers at once")
	}
	defer s.inStep.Store(false)
	s.steps.Add(1)
	seen := s.events.Load()
	if seen < s.lastSeen {
		s.t.Error("events went backwards")
	}
	s.lastSeen = seen
	if seen == s.total {
		return Ready
	}
	if seen%3 == 0 {
		return Yield // mix yields into the storm
	}
	return Pending
}

func (s *stormTask) Done(err error) { s.done <- err }

func TestState_WakeStorm(t *testing.T) {
	p, err := New(Options{Workers: 2})
	require.NoError(t, err)
	defer p.Close()

	const tasks, wakers = 8, 4
	perWaker := *stormWakes
	ts := make([]*stormTask, tasks)
	hs := make([]*Handle, tasks)
	for i := range ts {
		ts[i] = &stormTask{t: t, total: int64(wakers * perWaker), done: make(chan error, 1)}
		hs[i], err = p.Spawn(context.Background(), ts[i], SpawnOptions{})
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for range wakers {
		wg.Go(func() {
			for range perWaker {
				for i, ts := range ts {
					// The event happens before the wake: the step that the
					// wake guarantees must see it.
					ts.events.Add(1)
					hs[i].Wake()
				}
			}
		})
	}
	wg.Wait()
	hang := time.After(30 * time.Second) // a hang detector, not a timing assertion
	for i, ts := range ts {
		select {
		case err := <-ts.done:
			assert.NoError(t, err)
		case <-hang:
			t.Fatalf("task %d never saw its last wake: %d of %d events, %d steps", i, ts.lastSeenSafe(), ts.total, ts.steps.Load())
		}
		assert.Equal(t, ts.total, ts.lastSeen)
		// Wakes after completion are no-ops: no further steps.
		steps := ts.steps.Load()
		hs[i].Wake()
		hs[i].Cancel(nil)
		assert.Equal(t, steps, ts.steps.Load())
		st := hs[i].Stats()
		assert.Equal(t, int(steps), st.Steps)
		// Every Pending return was answered by a wake (during the step or
		// after it); a task that never waited needed none.
		assert.GreaterOrEqual(t, st.Wakes, st.Pendings)
	}
	st := p.Stats()
	assert.Zero(t, st.Pending)
	assert.Zero(t, st.Queued)
	assert.EqualValues(t, tasks, st.Completed)
}

func (s *stormTask) lastSeenSafe() int64 { return s.events.Load() }

func TestState_WakeWhilePollingIsKept(t *testing.T) {
	p, err := New(Options{Workers: 1})
	require.NoError(t, err)
	defer p.Close()
	var steps atomic.Int32
	task, done := doneTask(func(sc *StepContext) Status {
		if steps.Add(1) == 1 {
			// A wake arrives before this step returns Pending.
			sc.Handle().Wake()
			return Pending
		}
		return Ready
	})
	_, err = p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // a hang detector
		t.Fatal("the wake that arrived during the step was lost")
	}
	assert.EqualValues(t, 2, steps.Load())
}

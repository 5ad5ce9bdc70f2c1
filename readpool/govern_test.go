package readpool

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// verdictAfter is a Governor that returns v from the nth step of a task on,
// and records the entries it saw.
type verdictAfter struct {
	mu     sync.Mutex
	n      int
	v      Verdict
	levels []int
	rows   []int64
	calls  int
}

func (g *verdictAfter) Govern(e *Entry, _ Task) Verdict {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	g.levels = append(g.levels, e.Level)
	g.rows = append(g.rows, e.Rows)
	if g.calls >= g.n {
		return g.v
	}
	return Verdict{}
}

// rowsTask charges 10 rows a step and yields, ending after steps steps.
func rowsTask(steps int) (*funcTask, chan error) {
	n := 0
	return doneTask(func(sc *StepContext) Status {
		sc.Charge(10, 100)
		if n++; n == steps {
			return Ready
		}
		return Yield
	})
}

func TestGovernor_StopEndsTheTaskAtItsNextStep(t *testing.T) {
	errRunaway := errors.New("runaway")
	g := &verdictAfter{n: 2, v: Verdict{Stop: errRunaway}}
	p := newPool(t, Options{Workers: 1, Governor: g})
	task, done := rowsTask(100)
	h, err := p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	assert.ErrorIs(t, <-done, errRunaway)
	assert.Equal(t, 2, h.Stats().Steps, "no step after the verdict")
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, []int64{10, 20}, g.rows, "the governor sees the task's rows so far")
}

func TestGovernor_StopEndsAWaitingTask(t *testing.T) {
	errRunaway := errors.New("runaway")
	p := newPool(t, Options{Workers: 1, Governor: &verdictAfter{n: 1, v: Verdict{Stop: errRunaway}}})
	task, done := doneTask(func(*StepContext) Status { return Pending })
	_, err := p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	// Nobody wakes it: the verdict alone must end it.
	assert.ErrorIs(t, <-done, errRunaway)
	assert.Zero(t, p.Stats().Pending)
}

func TestGovernor_DemoteRunsTheTaskOnTheLastLevel(t *testing.T) {
	g := &verdictAfter{n: 1, v: Verdict{Demote: true}}
	p := newPool(t, Options{Workers: 1, Governor: g})
	task, done := rowsTask(3)
	_, err := p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	require.NoError(t, <-done)
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, []int{0, 2}, g.levels, "level 0 first, the last level once demoted (the last step ends the task and is not governed)")
}

func TestGovernor_NotCalledForTheStepThatEnds(t *testing.T) {
	g := &verdictAfter{n: 1, v: Verdict{Stop: errors.New("runaway")}}
	p := newPool(t, Options{Workers: 1, Governor: g})
	task, done := rowsTask(1)
	_, err := p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	assert.NoError(t, <-done, "a task that ended in its step keeps its result")
}

// A demoted entry runs at the MLFQ's last level, and never inline: the
// pool's cooldown refuses it around any queue.
func TestMLFQ_DemotedEntry(t *testing.T) {
	q := NewMLFQ(MLFQOptions{})
	e := &Entry{Demoted: true}
	assert.Equal(t, 2, q.LevelOf(e))
	for _, c := range []struct {
		name string
		q    Queue
	}{{"mlfq", q}, {"fifo", NewFIFO()}, {"work-stealing", NewWorkStealing()}} {
		assert.False(t, WithCooldown(c.q, 0).MayInline(e), "%s: a demoted task does not overtake the queue", c.name)
		assert.True(t, WithCooldown(c.q, 0).MayInline(&Entry{}), "%s: another may", c.name)
	}
}

func TestWaitEstimate(t *testing.T) {
	const s = time.Millisecond
	for _, c := range []struct {
		ahead, free, workers int
		want                 time.Duration
	}{
		{0, 1, 2, 0},           // a worker is free
		{1, 2, 2, 0},           // free workers for everyone ahead and it
		{0, 0, 1, s / 2},       // one busy worker, half through its step
		{0, 0, 2, s / 3},       // the first of two ends sooner
		{3, 0, 2, 3 * s / 2},   // its turn is the 4th end: 2 steps a worker less half
		{10, 0, 1, 10*s + s/2}, // a queue of 10 steps before it
		{2, 1, 2, s / 2},       // the free worker takes one; it is 2nd among the busy ends
		{5, 0, 0, 0},           // no workers: no estimate
	} {
		assert.Equal(t, c.want, waitEstimate(c.ahead, c.free, c.workers, s), "%+v", c)
	}
}

func TestMLFQ_Ahead(t *testing.T) {
	q := NewMLFQ(MLFQOptions{})
	for range 2 {
		q.Push(&Entry{Short: true}, 0)
	}
	for range 3 {
		q.Push(&Entry{}, 0)
	}
	q.Push(&Entry{Elapsed: time.Millisecond}, 0)      // level 0, has run
	q.Push(&Entry{Elapsed: 10 * time.Millisecond}, 0) // level 1
	assert.Equal(t, 2, q.Ahead(&Entry{Short: true}), "a point read waits for the point reads")
	assert.Equal(t, 5, q.Ahead(&Entry{}), "a fresh task for every fresh one")
	assert.Equal(t, 6, q.Ahead(&Entry{Elapsed: time.Millisecond}), "a level-0 task that has run for level 0")
	assert.Equal(t, 7, q.Ahead(&Entry{Demoted: true}), "the last level for all")
}

func TestSpawn_MaxQueueWaitRefusesWithTheEstimate(t *testing.T) {
	p := newPool(t, Options{Workers: 1, Spares: -1})
	release := make(chan struct{})
	blocker, blockerDone, started := blockingTask(release)
	require.NoError(t, p.Go(context.Background(), blocker, SpawnOptions{}))
	<-started // the only worker is busy
	queued, queuedDone := readyTask()
	require.NoError(t, p.Go(context.Background(), queued, SpawnOptions{}))

	est := p.estimateWait(SpawnOptions{})
	assert.Positive(t, est, "one task ahead and the worker busy: not zero")

	task, done := readyTask()
	_, err := p.Spawn(context.Background(), task, SpawnOptions{MaxQueueWait: time.Nanosecond})
	var be *BusyError
	require.ErrorAs(t, err, &be)
	assert.ErrorIs(t, err, ErrBusy)
	assert.Equal(t, est, be.EstimatedWait)
	select {
	case <-done:
		t.Fatal("a refused task must not run or end")
	default:
	}

	admitted, admittedDone := readyTask()
	_, err = p.Spawn(context.Background(), admitted, SpawnOptions{MaxQueueWait: time.Hour})
	require.NoError(t, err)
	close(release)
	require.NoError(t, <-blockerDone)
	require.NoError(t, <-queuedDone)
	require.NoError(t, <-admittedDone)

	w := p.Stats().Waits
	assert.EqualValues(t, 1, w.Refused)
	assert.EqualValues(t, 1, w.Started)
	assert.EqualValues(t, 1, w.WithinLimit)
	assert.Zero(t, p.Stats().RejectedBusy, "a refusal for the wait is not a full pool")
}

// A slot lent to a step running inline is busy too: with the only worker's
// slot lent, a task would wait.
func TestEstimateWait_LentSlotIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Options{Workers: 1, Spares: -1})
		require.NoError(t, err)
		defer func() { require.NoError(t, p.Close()) }()
		synctest.Wait() // the worker parks
		require.Equal(t, 1, p.Stats().Parked)
		assert.Zero(t, p.estimateWait(SpawnOptions{}), "a parked worker takes it at once")
		release := make(chan struct{})
		blocker, blockerDone, started := blockingTask(release)
		go func() { _, _ = p.Spawn(context.Background(), blocker, SpawnOptions{Inline: true}) }()
		<-started
		require.EqualValues(t, 1, p.Stats().Inline, "the blocker runs inline, in the worker's lent slot")
		assert.Positive(t, p.estimateWait(SpawnOptions{}))
		close(release)
		require.NoError(t, <-blockerDone)
	})
}

// The estimate is never below what recent first steps waited: a free
// worker still has to be woken.
func TestEstimateWait_AtLeastRecentWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Options{Workers: 2, Spares: -1})
		require.NoError(t, err)
		defer func() { require.NoError(t, p.Close()) }()
		synctest.Wait()
		assert.Zero(t, p.estimateWait(SpawnOptions{}), "nothing measured, a worker free")
		p.slots.workers[0].own.firstWait.Store(3 * time.Millisecond)
		p.slots.workers[1].lent.firstWait.Store(time.Millisecond)
		assert.Equal(t, 2*time.Millisecond, p.estimateWait(SpawnOptions{}), "the mean of the slots that measured")
	})
}

// The estimate against the wait measured: on synctest's clock, with one
// worker whose steps all take 1 ms (the average is of every step: short
// steps among long ones pull it down, and the estimate with it), a task spawned behind n queued ones
// while a step has just begun waits n+1 steps; the estimate (half the
// running step assumed done) is within one step of it, and a task admitted
// with a limit the estimate fits in is counted as started within it.
func TestEstimateWait_AgainstMeasuredWait(t *testing.T) {
	const step = time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Options{Workers: 1, Spares: -1, Queue: NewFIFO(), TimeSlice: time.Hour})
		require.NoError(t, err)
		defer func() { require.NoError(t, p.Close()) }()
		sleeper := func(started chan<- struct{}) (*funcTask, chan error) {
			return doneTask(func(*StepContext) Status {
				if started != nil {
					close(started)
				}
				time.Sleep(step)
				return Ready
			})
		}
		// Teach the worker's average what a step takes.
		for range 20 {
			task, done := sleeper(nil)
			require.NoError(t, p.Go(context.Background(), task, SpawnOptions{}))
			require.NoError(t, <-done)
		}
		for _, n := range []int{0, 1, 4} {
			started := make(chan struct{})
			running, runningDone := sleeper(started)
			require.NoError(t, p.Go(context.Background(), running, SpawnOptions{}))
			<-started // a step has just begun: 1 ms left of it
			var dones []chan error
			for range n {
				task, done := sleeper(nil)
				require.NoError(t, p.Go(context.Background(), task, SpawnOptions{}))
				dones = append(dones, done)
			}
			est := p.estimateWait(SpawnOptions{})
			spawned := time.Now()
			var waited time.Duration
			probe, probeDone := doneTask(func(*StepContext) Status {
				waited = time.Since(spawned)
				time.Sleep(step) // every step 1 ms, the probe's too: the average stays a step
				return Ready
			})
			require.NoError(t, p.Go(context.Background(), probe, SpawnOptions{MaxQueueWait: est + step}))
			require.NoError(t, <-probeDone)
			require.NoError(t, <-runningDone)
			for _, d := range dones {
				require.NoError(t, <-d)
			}
			assert.Equal(t, time.Duration(n+1)*step, waited, "%d queued: the running step and each of them", n)
			assert.InDelta(t, float64(waited), float64(est), float64(step), "%d queued: the estimate %v within a step of the wait %v", n, est, waited)
		}
		w := p.Stats().Waits
		assert.EqualValues(t, 3, w.Started)
		assert.EqualValues(t, 3, w.WithinLimit, "each admitted with its estimate plus a step, and started within it")
	})
}

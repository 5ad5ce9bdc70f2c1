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

func TestSlackPolicy(t *testing.T) {
	sp := slackPolicy{max: 10, low: 0.75, high: 0.9}
	for _, c := range []struct {
		name  string
		slack int64
		in    slackInput
		want  int64
	}{
		{name: "no read blocked: none", slack: 7, in: slackInput{blocked: 0, waiting: true, cpu: 0.1}, want: 0},
		{name: "reads block, work waits, CPU idle: up one", slack: 3, in: slackInput{blocked: 5, waiting: true, cpu: 0.3}, want: 4},
		{name: "up to the most", slack: 10, in: slackInput{blocked: 5, waiting: true, cpu: 0.3}, want: 10},
		{name: "between low and high: hold", slack: 3, in: slackInput{blocked: 5, waiting: true, cpu: 0.8}, want: 3},
		{name: "CPU busy: down one", slack: 3, in: slackInput{blocked: 5, waiting: true, cpu: 0.95}, want: 2},
		{name: "nothing waits: down one", slack: 3, in: slackInput{blocked: 5, waiting: false, cpu: 0.1}, want: 2},
		{name: "never below 0", slack: 0, in: slackInput{blocked: 5, waiting: false, cpu: 1}, want: 0},
		{name: "at high exactly: down", slack: 3, in: slackInput{blocked: 1, waiting: true, cpu: 0.9}, want: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, sp.next(c.slack, c.in))
		})
	}
}

func TestCPUMeter(t *testing.T) {
	var wall, cpu time.Duration
	procs := 2
	m := cpuMeter{env: cpuEnv{
		now:     func() time.Duration { return wall },
		cpuTime: func() time.Duration { return cpu },
		procs:   func() int { return procs },
	}}
	wall, cpu = time.Second, 5*time.Second
	assert.Zero(t, m.use(), "the first reading has no window")
	wall, cpu = wall+time.Millisecond, cpu+time.Millisecond
	assert.InDelta(t, 0.5, m.use(), 1e-9, "1 ms of CPU in 1 ms on 2 Ps")
	wall, cpu = wall+time.Millisecond, cpu+2*time.Millisecond
	assert.InDelta(t, 1.0, m.use(), 1e-9)
	m.reset()
	wall, cpu = wall+time.Hour, cpu+time.Hour
	assert.Zero(t, m.use(), "after a reset, a new window")
	assert.Zero(t, m.use(), "no time passed")
}

// TestPool_SlackTick runs the controller on the monitor's loop against an
// idle fake CPU: the slack grows while a read blocks and a task waits, an
// extra runs the task, and the slack drops once no read blocks.
func TestPool_SlackTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := func() time.Duration { return 0 }
		p := newPool(t, Options{Workers: 1, Spares: -1, MaxWorkers: 4, cpuTime: idle})

		// The worker's step blocked in a read it told of; an extra runs a
		// step that holds it without telling (on the CPU, for all the pool
		// knows): one blocked read, one extra, no room for a third task.
		release := make(chan struct{})
		var inStep atomic.Int64
		var dones []chan error
		for _, tell := range []bool{true, false} {
			task, d := diskTask(p, tell, release, &inStep)
			_, err := p.Spawn(context.Background(), task, SpawnOptions{})
			require.NoError(t, err)
			dones = append(dones, d)
			synctest.Wait()
		}
		require.EqualValues(t, 2, inStep.Load())
		assert.Zero(t, p.Stats().Slack)
		var ran atomic.Bool
		task, d := doneTask(func(*StepContext) Status {
			ran.Store(true)
			return Ready
		})
		_, err := p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
		synctest.Wait()
		assert.False(t, ran.Load(), "queued: the rule's one extra is taken")

		time.Sleep(10 * slackPeriod) // the controller's ticks
		synctest.Wait()
		assert.True(t, ran.Load(), "the slack let an extra run it")
		require.NoError(t, <-d)

		close(release)
		for _, d := range dones {
			require.NoError(t, <-d)
		}
		time.Sleep(10 * slackPeriod)
		synctest.Wait()
		assert.Zero(t, p.Stats().Slack, "no read blocks: no slack")
		assert.Zero(t, p.Stats().Extra)
	})
}

// TestSpawn_InlineOnAnExtraSlotWhileReadsBlock: with the only worker's step
// blocked in a read, an Inline spawn runs its first step on the caller's
// goroutine in an extra's slot, and a task that goes on is adopted.
func TestSpawn_InlineOnAnExtraSlotWhileReadsBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, Spares: -1})
		release := make(chan struct{})
		var inStep atomic.Int64
		task, blockedDone := diskTask(p, true, release, &inStep)
		_, err := p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
		synctest.Wait()

		steps := 0
		inline, done := doneTask(func(sc *StepContext) Status {
			if steps++; steps == 1 {
				return Yield
			}
			return Ready
		})
		_, err = p.Spawn(context.Background(), inline, SpawnOptions{Inline: true})
		require.NoError(t, err)
		require.NoError(t, <-done, "the yielded task was adopted and finished")
		st := p.Stats()
		assert.EqualValues(t, 1, st.Inline, "its first step ran inline")
		assert.Equal(t, 2, steps)

		close(release)
		require.NoError(t, <-blockedDone)
		synctest.Wait()
		assert.Zero(t, p.Stats().Extra, "the borrowed slot was given back")
	})
}

// TestPool_CloseWaitsForAStepInAnExtraSlot: Close returns only once a step
// a caller runs in an extra's slot has ended, and leaves no goroutine.
func TestPool_CloseWaitsForAStepInAnExtraSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := New(Options{Workers: 1, Spares: -1})
		require.NoError(t, err)
		release := make(chan struct{})
		var inStep atomic.Int64
		task, blockedDone := diskTask(p, true, release, &inStep)
		_, err = p.Spawn(context.Background(), task, SpawnOptions{})
		require.NoError(t, err)
		synctest.Wait()
		require.EqualValues(t, 1, p.Stats().Blocked)

		inlineRelease := make(chan struct{})
		inline, inlineDone := doneTask(func(*StepContext) Status {
			<-inlineRelease
			return Ready
		})
		go func() { _, _ = p.Spawn(context.Background(), inline, SpawnOptions{Inline: true}) }()
		synctest.Wait()
		assert.EqualValues(t, 2, p.Stats().Busy, "the worker's step and the caller's")
		closed := make(chan struct{})
		go func() {
			_ = p.Close()
			close(closed)
		}()
		close(release)
		require.NoError(t, <-blockedDone)
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a step ran in an extra's slot")
		default:
		}
		close(inlineRelease)
		require.NoError(t, <-inlineDone)
		<-closed
	})
}

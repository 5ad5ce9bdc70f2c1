package resource

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// The Scheduler inside a real read pool.

// newPool starts a pool whose queue and accountant are s, closed (and
// checked drained) at the end of the test. Long steps never call for extra
// workers unless the test sets LongStep: a blocked step must keep its
// worker.
func newPool(t *testing.T, s *Scheduler, opts readpool.Options) *readpool.Pool {
	t.Helper()
	opts.Queue, opts.Accountant = s, s
	if opts.LongStep == 0 {
		opts.LongStep = time.Hour
	}
	p, err := readpool.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// fnTask is a task running step, that reports its Done error on done.
type fnTask struct {
	step func(sc *readpool.StepContext) readpool.Status
	done chan error
}

func newTask(step func(sc *readpool.StepContext) readpool.Status) *fnTask {
	return &fnTask{step: step, done: make(chan error, 1)}
}

func (t *fnTask) Step(sc *readpool.StepContext) readpool.Status { return t.step(sc) }
func (t *fnTask) Done(err error)                                { t.done <- err }

// spawnIn spawns task in group g, as kv does: the group resolved once, in
// Tag.
func spawnIn(p *readpool.Pool, ctx context.Context, g *Group, task readpool.Task) (*readpool.Handle, error) {
	return p.Spawn(ctx, task, readpool.SpawnOptions{Group: g.Name(), Tag: g})
}

// ready is a one-step task.
func ready() *fnTask {
	return newTask(func(*readpool.StepContext) readpool.Status { return readpool.Ready })
}

// working is a one-step task that works for d of (bubble) time.
func working(d time.Duration) *fnTask {
	return newTask(func(*readpool.StepContext) readpool.Status {
		time.Sleep(d) // the step's work, on the synctest clock
		return readpool.Ready
	})
}

// A throttled group's task waits in the held set, holding no worker, and
// runs when its bucket has refilled what the group owes.
func TestPool_HeldTaskHoldsNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManager()
		require.NoError(t, m.Put(GroupConfig{Name: "slow", RUPerSec: 1}))
		s := NewScheduler(m)
		p := newPool(t, s, readpool.Options{Workers: 1, MaxTasks: 8})
		slow := m.Resolve("slow")
		start := time.Now()

		// 30 ms of work and the request: 10.125 RU against a bucket of 1.
		first := working(30 * time.Millisecond)
		_, err := spawnIn(p, context.Background(), slow, first)
		require.NoError(t, err)
		require.NoError(t, <-first.done)
		require.Equal(t, 30*time.Millisecond, time.Since(start))

		var ranAt atomic.Int64
		second := newTask(func(*readpool.StepContext) readpool.Status {
			ranAt.Store(int64(time.Since(start)))
			return readpool.Ready
		})
		_, err = spawnIn(p, context.Background(), slow, second)
		require.NoError(t, err)
		synctest.Wait()
		st := p.Stats()
		assert.Equal(t, 1, st.Held)
		assert.Zero(t, st.Busy, "a held task occupies no worker")
		assert.Zero(t, st.Queued)
		assert.Equal(t, 1, st.Parked)
		gs := groupStats(t, m, "slow")
		assert.EqualValues(t, 1, gs.Held)
		assert.Positive(t, gs.Throttled)

		// The worker is free for everyone else meanwhile.
		other := ready()
		_, err = spawnIn(p, context.Background(), m.Default(), other)
		require.NoError(t, err)
		require.NoError(t, <-other.done)

		// 9.095 RU owed at 30 ms, refilled at 1 RU/s: back at ~9.125 s.
		time.Sleep(9*time.Second - time.Since(start))
		synctest.Wait()
		assert.Zero(t, ranAt.Load(), "not before its tokens are back")
		assert.Equal(t, 1, p.Stats().Held)
		assert.Zero(t, p.Stats().Busy)

		require.NoError(t, <-second.done)
		assert.InDelta(t, 9125*time.Millisecond, time.Duration(ranAt.Load()), float64(time.Millisecond), "when its tokens came back")
		st = p.Stats()
		assert.Zero(t, st.Held)
		assert.EqualValues(t, 3, st.Completed)
		assert.Zero(t, groupStats(t, m, "slow").Held)
	})
}

// A held task whose deadline comes first ends at its deadline, without a
// step, and leaves the held set.
func TestPool_HeldTaskDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManager()
		require.NoError(t, m.Put(GroupConfig{Name: "slow", RUPerSec: 1}))
		s := NewScheduler(m)
		p := newPool(t, s, readpool.Options{Workers: 1})
		slow := m.Resolve("slow")
		first := working(30 * time.Millisecond)
		_, err := spawnIn(p, context.Background(), slow, first)
		require.NoError(t, err)
		require.NoError(t, <-first.done)

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var stepped atomic.Bool
		task := newTask(func(*readpool.StepContext) readpool.Status { stepped.Store(true); return readpool.Ready })
		start := time.Now()
		_, err = spawnIn(p, ctx, slow, task)
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 1, p.Stats().Held)

		assert.ErrorIs(t, <-task.done, context.DeadlineExceeded)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "at its deadline, not when its tokens come back")
		assert.False(t, stepped.Load())
		st := p.Stats()
		assert.Zero(t, st.Held)
		assert.EqualValues(t, 1, st.Dropped)
		gs := groupStats(t, m, "slow")
		assert.Zero(t, gs.Held)
		assert.Zero(t, gs.Queued)
		assert.Zero(t, gs.Running)
	})
}

// A low-priority group floods a pool whose one worker is blocked: it
// makes itself busy, and the high and medium groups' tasks are all
// admitted; once the worker is free they run by class.
func TestPool_AdmissionUnderFlood(t *testing.T) {
	const (
		maxTasks = 8
		flood    = 300
		high     = 6
		medium   = 7 // beside the blocker: the medium class is full
	)
	m := NewManager()
	for _, c := range []GroupConfig{
		{Name: "batch", RUPerSec: 100, Burstable: true, Priority: PriorityLow},
		{Name: "oltp", RUPerSec: 100, Burstable: true, Priority: PriorityHigh},
		{Name: "web", RUPerSec: 100, Burstable: true},
	} {
		require.NoError(t, m.Put(c))
	}
	s := NewScheduler(m)
	p := newPool(t, s, readpool.Options{Workers: 1, MaxTasks: maxTasks})

	release, started := make(chan struct{}), make(chan struct{})
	blocker := newTask(func(*readpool.StepContext) readpool.Status {
		close(started)
		<-release
		return readpool.Ready
	})
	_, err := spawnIn(p, context.Background(), m.Default(), blocker)
	require.NoError(t, err)
	<-started

	var mu sync.Mutex
	var order []string
	type outcome struct {
		admitted, busy atomic.Int64
		tasks          []*fnTask
		mu             sync.Mutex
	}
	outcomes := map[string]*outcome{"batch": {}, "oltp": {}, "web": {}}
	spawn := func(group string) {
		task := newTask(func(*readpool.StepContext) readpool.Status {
			mu.Lock()
			order = append(order, group)
			mu.Unlock()
			return readpool.Ready
		})
		o := outcomes[group]
		switch _, err := spawnIn(p, context.Background(), m.Resolve(group), task); {
		case err == nil:
			o.admitted.Add(1)
			o.mu.Lock()
			o.tasks = append(o.tasks, task)
			o.mu.Unlock()
		case errors.Is(err, readpool.ErrBusy):
			o.busy.Add(1)
		default:
			assert.NoError(t, err)
		}
	}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range flood + high + medium {
		group := "batch"
		switch {
		case i%40 == 7 && i/40 < high:
			group = "oltp"
		case i%40 == 23 && i/40 < medium:
			group = "web"
		}
		wg.Go(func() { <-gate; spawn(group) })
	}
	close(gate)
	wg.Wait()

	batch, oltp, web := outcomes["batch"], outcomes["oltp"], outcomes["web"]
	t.Logf("batch: %d admitted, %d busy; oltp %d admitted; web %d admitted", batch.admitted.Load(), batch.busy.Load(), oltp.admitted.Load(), web.admitted.Load())
	assert.EqualValues(t, maxTasks, batch.admitted.Load(), "the flood gets its class's room")
	assert.EqualValues(t, flood-maxTasks, batch.busy.Load())
	assert.EqualValues(t, high, oltp.admitted.Load(), "every high task admitted")
	assert.EqualValues(t, medium, web.admitted.Load(), "every medium task admitted")
	assert.EqualValues(t, flood-maxTasks, groupStats(t, m, "batch").RejectedBusy)
	assert.Zero(t, groupStats(t, m, "oltp").RejectedBusy)
	assert.Zero(t, groupStats(t, m, "web").RejectedBusy)
	assert.EqualValues(t, flood-maxTasks, p.Stats().RejectedBusy)

	close(release)
	require.NoError(t, <-blocker.done)
	for name, o := range outcomes {
		for _, task := range o.tasks {
			assert.NoError(t, <-task.done, name)
		}
	}
	want := []string{}
	for _, c := range []struct {
		name string
		n    int
	}{{"oltp", high}, {"web", medium}, {"batch", maxTasks}} {
		for range c.n {
			want = append(want, c.name)
		}
	}
	mu.Lock()
	assert.Equal(t, want, order, "high, then medium, then low")
	mu.Unlock()
	st := p.Stats()
	assert.EqualValues(t, 1+high+medium+maxTasks, st.Completed)
	assert.Equal(t, "priority", st.Queue.Kind)
}

// A low step that checks ShouldYield gives way within one unit when a high
// task arrives.
func TestPool_HigherClassPreemptsAtTheNextUnit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManager()
		require.NoError(t, m.Put(GroupConfig{Name: "lo", Burstable: true, Priority: PriorityLow}))
		require.NoError(t, m.Put(GroupConfig{Name: "hi", Burstable: true, Priority: PriorityHigh}))
		s := NewScheduler(m)
		p := newPool(t, s, readpool.Options{Workers: 1, TimeSlice: time.Hour, Budget: 1 << 30})
		running := make(chan struct{})
		var units, steps atomic.Int64
		var hiDoneAt atomic.Int64
		start := time.Now()
		low := newTask(func(sc *readpool.StepContext) readpool.Status {
			if steps.Add(1) == 1 {
				close(running)
			}
			for !sc.ShouldYield() {
				if units.Add(1) == 1000 {
					return readpool.Ready
				}
				time.Sleep(100 * time.Microsecond) // one unit of work
			}
			return readpool.Yield
		})
		_, err := spawnIn(p, context.Background(), m.Resolve("lo"), low)
		require.NoError(t, err)
		<-running
		time.Sleep(time.Millisecond)
		hi := newTask(func(*readpool.StepContext) readpool.Status {
			hiDoneAt.Store(int64(time.Since(start)))
			return readpool.Ready
		})
		_, err = spawnIn(p, context.Background(), m.Resolve("hi"), hi)
		require.NoError(t, err)
		require.NoError(t, <-hi.done)
		require.NoError(t, <-low.done)
		assert.EqualValues(t, 2, steps.Load(), "the low task was cut once")
		assert.LessOrEqual(t, time.Duration(hiDoneAt.Load()), time.Millisecond+100*time.Microsecond, "within one unit")
		assert.EqualValues(t, 1, p.Stats().Preempted)
	})
}

// Put and Delete while tasks run: a task queued after the change (here,
// requeued after a step) is ordered by the new config.
func TestPool_RuntimeChangesApplyToTasksQueuedAfter(t *testing.T) {
	for _, c := range []struct {
		name   string
		x      GroupConfig
		change func(m *Manager) error
		want   []string
	}{
		{"unchanged low", GroupConfig{Name: "x", Burstable: true, Priority: PriorityLow}, nil, []string{"x1", "y1", "y2", "x2"}},
		{"raised to high", GroupConfig{Name: "x", Burstable: true, Priority: PriorityLow},
			func(m *Manager) error { return m.Put(GroupConfig{Name: "x", Burstable: true, Priority: PriorityHigh}) },
			[]string{"x1", "x2", "y1", "y2"}},
		{"unchanged high", GroupConfig{Name: "x", Burstable: true, Priority: PriorityHigh}, nil, []string{"x1", "x2", "y1", "y2"}},
		{"lowered to low", GroupConfig{Name: "x", Burstable: true, Priority: PriorityHigh},
			func(m *Manager) error { return m.Put(GroupConfig{Name: "x", Burstable: true, Priority: PriorityLow}) },
			[]string{"x1", "y1", "y2", "x2"}},
		{"low, deleted: as default, medium", GroupConfig{Name: "x", Burstable: true, Priority: PriorityLow},
			func(m *Manager) error { return m.Delete("x") },
			nil}, // medium beside medium: by virtual time; checked below
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := NewManager()
				require.NoError(t, m.Put(c.x))
				require.NoError(t, m.Put(GroupConfig{Name: "y", RUPerSec: 1000, Burstable: true}))
				s := NewScheduler(m)
				p := newPool(t, s, readpool.Options{Workers: 1})
				var mu sync.Mutex
				var order []string
				record := func(s string) {
					mu.Lock()
					order = append(order, s)
					mu.Unlock()
				}
				started, gate := make(chan struct{}), make(chan struct{})
				xSteps := 0
				x := newTask(func(*readpool.StepContext) readpool.Status {
					xSteps++
					record(fmt.Sprint("x", xSteps))
					if xSteps == 1 {
						close(started)
						<-gate
						return readpool.Yield
					}
					return readpool.Ready
				})
				ySteps := 0
				y := newTask(func(*readpool.StepContext) readpool.Status {
					ySteps++
					record(fmt.Sprint("y", ySteps))
					time.Sleep(time.Millisecond)
					if ySteps == 1 {
						return readpool.Yield
					}
					return readpool.Ready
				})
				xg := m.Resolve("x")
				_, err := spawnIn(p, context.Background(), xg, x)
				require.NoError(t, err)
				<-started
				_, err = spawnIn(p, context.Background(), m.Resolve("y"), y)
				require.NoError(t, err)
				if c.change != nil {
					require.NoError(t, c.change(m))
				}
				close(gate)
				require.NoError(t, <-x.done)
				require.NoError(t, <-y.done)
				mu.Lock()
				defer mu.Unlock()
				if c.want != nil {
					assert.Equal(t, c.want, order)
					return
				}
				// Deleted: no longer low, so x2 does not wait for all of y.
				assert.Equal(t, []string{"x1", "y1", "x2", "y2"}, order)
				assert.Equal(t, defaultConfig, xg.Config())
				for _, st := range m.Stats() {
					assert.NotEqual(t, "x", st.Name)
				}
			})
		})
	}
}

// Put of a limit and Delete while a task runs, or once its next step is
// held for its group's debt: that step is held, or not, by the config in
// force — a held task is looked at again at the change (Scheduler.SetKick),
// not left to wait out the debt the old limit gave it.
func TestPool_RuntimeLimitChanges(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(m *Manager) error
		held   bool
	}{
		{"unchanged: held ~9 s for its debt", nil, true},
		{"deleted: runs as default, unlimited", func(m *Manager) error { return m.Delete("x") }, false},
		{"made burstable", func(m *Manager) error { return m.Put(GroupConfig{Name: "x", RUPerSec: 1, Burstable: true}) }, false},
		{"made unlimited", func(m *Manager) error { return m.Put(GroupConfig{Name: "x"}) }, false},
		{"limit raised", func(m *Manager) error { return m.Put(GroupConfig{Name: "x", RUPerSec: 1e6}) }, false},
		{"limit kept", func(m *Manager) error { return m.Put(GroupConfig{Name: "x", RUPerSec: 1}) }, true},
		{"limit lowered", func(m *Manager) error { return m.Put(GroupConfig{Name: "x", RUPerSec: 0.5}) }, true},
	} {
		for _, whileHeld := range []bool{false, true} {
			name := c.name + "/while running"
			if whileHeld {
				name = c.name + "/while held"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					m := NewManager()
					require.NoError(t, m.Put(GroupConfig{Name: "x", RUPerSec: 1}))
					s := NewScheduler(m)
					p := newPool(t, s, readpool.Options{Workers: 1})
					start := time.Now()
					started, gate := make(chan struct{}), make(chan struct{})
					var secondAt atomic.Int64
					steps := 0
					x := newTask(func(*readpool.StepContext) readpool.Status {
						steps++
						if steps == 1 {
							close(started)
							<-gate
							time.Sleep(30 * time.Millisecond) // 10 RU of work
							return readpool.Yield
						}
						secondAt.Store(int64(time.Since(start)))
						return readpool.Ready
					})
					_, err := spawnIn(p, context.Background(), m.Resolve("x"), x)
					require.NoError(t, err)
					<-started
					changeAt := 30 * time.Millisecond // as the first step ends
					if whileHeld {
						close(gate)
						time.Sleep(100 * time.Millisecond)
						synctest.Wait()
						require.Equal(t, 1, p.Stats().Held, "held for its debt")
						changeAt = 100 * time.Millisecond
					}
					if c.change != nil {
						require.NoError(t, c.change(m))
					}
					if !whileHeld {
						close(gate)
					}
					require.NoError(t, <-x.done)
					at := time.Duration(secondAt.Load())
					t.Logf("second step at %v", at)
					if c.held {
						assert.Greater(t, at, 9*time.Second)
					} else {
						assert.Equal(t, changeAt, at, "at once")
					}
				})
			})
		}
	}
}

// Many groups spawn at once while their configs change and groups come and
// go; some tasks are cancelled while queued. Every admitted task ends
// exactly once, the pool closes cleanly and the scheduler is left empty.
func TestPool_ConcurrentSpawnsFromManyGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManager()
		prios := []Priority{PriorityLow, PriorityMedium, PriorityHigh}
		config := func(i, round int) GroupConfig {
			return GroupConfig{
				Name:      fmt.Sprintf("g%d", i),
				RUPerSec:  float64(10 * (1 + (i+round)%5)),
				Burstable: (i+round)%3 != 0,
				Priority:  prios[(i+round)%3],
			}
		}
		const groups, spawners, perSpawner = 8, 32, 40
		for i := range groups {
			require.NoError(t, m.Put(config(i, 0)))
		}
		s := NewScheduler(m)
		p, err := readpool.New(readpool.Options{Workers: 3, MaxTasks: 64, Queue: s, Accountant: s, LongStep: time.Hour})
		require.NoError(t, err)

		var admitted, busy, ended, stepped atomic.Int64
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var churn sync.WaitGroup
		churn.Go(func() {
			for round := 1; ; round++ {
				select {
				case <-stop:
					return
				default:
				}
				i := round % groups
				if round%4 == 0 {
					if err := m.Delete(fmt.Sprintf("g%d", i)); err != nil {
						assert.ErrorIs(t, err, ErrNoGroup)
					}
				} else {
					assert.NoError(t, m.Put(config(i, round)))
				}
				_ = m.Stats()
				time.Sleep(time.Millisecond)
			}
		})
		for sp := range spawners {
			wg.Go(func() {
				for j := range perSpawner {
					g := m.Resolve(fmt.Sprintf("g%d", (sp+j)%(groups+1))) // g8 never exists
					n := 1 + (sp+j)%4
					var once atomic.Bool
					task := &fnTask{done: make(chan error, 1)}
					task.step = func(sc *readpool.StepContext) readpool.Status {
						stepped.Add(1)
						time.Sleep(100 * time.Microsecond)
						if n--; n == 0 {
							return readpool.Ready
						}
						return readpool.Yield
					}
					h, err := p.Spawn(context.Background(), task, readpool.SpawnOptions{Group: g.Name(), Tag: g, Priority: uint64(prios[j%3]) * uint64(j%2)})
					if err != nil {
						assert.ErrorIs(t, err, readpool.ErrBusy)
						busy.Add(1)
						time.Sleep(time.Millisecond)
						continue
					}
					admitted.Add(1)
					if j%7 == 0 {
						h.Cancel(nil)
					}
					wg.Go(func() {
						err := <-task.done
						if err != nil {
							assert.ErrorIs(t, err, context.Canceled)
						}
						assert.False(t, once.Swap(true), "Done once")
						ended.Add(1)
					})
				}
			})
		}
		wg.Wait()
		close(stop)
		churn.Wait()
		// A task's Done comes before its worker files the step (the waiter
		// is not kept waiting for the pool's lock): let the workers park.
		synctest.Wait()
		t.Logf("%d admitted, %d busy, %d steps", admitted.Load(), busy.Load(), stepped.Load())
		assert.EqualValues(t, admitted.Load(), ended.Load())
		assert.Positive(t, admitted.Load())
		st := p.Stats()
		assert.Zero(t, st.Queued)
		assert.Zero(t, st.Held)
		assert.Zero(t, st.Running)
		require.NoError(t, p.Close())
		for _, g := range m.Stats() {
			assert.Zero(t, g.Queued, g.Name)
			assert.Zero(t, g.Held, g.Name)
			assert.Zero(t, g.Running, g.Name)
		}
		assert.Empty(t, s.active, "every group left the scheduler")
		assert.Equal(t, [numClasses]int{}, s.class)
	})
}

// Close ends held tasks with ErrClosed at once, and leaves nothing counted.
func TestPool_CloseEndsHeldTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewManager()
		require.NoError(t, m.Put(GroupConfig{Name: "slow", RUPerSec: 1}))
		s := NewScheduler(m)
		p, err := readpool.New(readpool.Options{Workers: 1, Queue: s, Accountant: s})
		require.NoError(t, err)
		slow := m.Resolve("slow")
		first := working(30 * time.Millisecond)
		_, err = spawnIn(p, context.Background(), slow, first)
		require.NoError(t, err)
		require.NoError(t, <-first.done)
		var tasks []*fnTask
		for range 3 {
			task := ready()
			_, err := spawnIn(p, context.Background(), slow, task)
			require.NoError(t, err)
			tasks = append(tasks, task)
		}
		synctest.Wait()
		require.Equal(t, 3, p.Stats().Held)
		start := time.Now()
		require.NoError(t, p.Close())
		for _, task := range tasks {
			assert.ErrorIs(t, <-task.done, readpool.ErrClosed)
		}
		assert.Zero(t, time.Since(start), "at once, not when the tokens come back")
		gs := groupStats(t, m, "slow")
		assert.Zero(t, gs.Held)
		assert.Zero(t, gs.Queued)
		assert.Empty(t, s.active)
	})
}

package readpool

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtraRule(t *testing.T) {
	for _, c := range []struct {
		name                  string
		workers, maxExtras    int
		extras                int
		stuck, blocked, slack int64
		ready                 bool
		wantStart             int
		wantTooMany           bool
		wantAllowed           int
	}{
		{name: "idle", workers: 2, maxExtras: 126, wantAllowed: 0},
		{name: "one blocked, work ready", workers: 2, maxExtras: 126, blocked: 1, ready: true, wantStart: 1, wantAllowed: 1},
		{name: "one blocked, nothing ready", workers: 2, maxExtras: 126, blocked: 1, wantAllowed: 1},
		{name: "one blocked, its extra runs", workers: 2, maxExtras: 126, extras: 1, blocked: 1, ready: true, wantAllowed: 1},
		{name: "the read returned: the extra goes idle", workers: 2, maxExtras: 126, extras: 1, wantTooMany: true},
		{name: "blocked reads are not capped by workers", workers: 2, maxExtras: 126, blocked: 30, ready: true, wantStart: 30, wantAllowed: 30},
		{name: "stuck steps are, one per worker", workers: 2, maxExtras: 126, stuck: 5, ready: true, wantStart: 2, wantAllowed: 2},
		{name: "stuck and blocked add up", workers: 2, maxExtras: 126, stuck: 1, blocked: 3, extras: 2, ready: true, wantStart: 2, wantAllowed: 4},
		{name: "MaxWorkers caps them", workers: 2, maxExtras: 6, blocked: 30, extras: 4, ready: true, wantStart: 2, wantAllowed: 6},
		{name: "at MaxWorkers, none more", workers: 2, maxExtras: 6, blocked: 30, extras: 6, ready: true, wantAllowed: 6},
		{name: "MaxWorkers = Workers: never", workers: 2, maxExtras: 0, stuck: 2, blocked: 30, ready: true},
		{name: "a count read mid-change below 0 counts as 0", workers: 2, maxExtras: 126, blocked: -1, extras: 1, wantTooMany: true},
		{name: "slack adds to blocked reads", workers: 2, maxExtras: 126, blocked: 3, slack: 5, extras: 3, ready: true, wantStart: 5, wantAllowed: 8},
		{name: "slack without a blocked read counts for nothing", workers: 2, maxExtras: 126, slack: 5, extras: 1, ready: true, wantTooMany: true},
		{name: "slack within MaxWorkers", workers: 2, maxExtras: 6, blocked: 3, slack: 5, ready: true, wantStart: 6, wantAllowed: 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := extraRule{workers: c.workers, maxExtras: c.maxExtras}
			d := extraDemand{stuck: c.stuck, blocked: c.blocked, slack: c.slack}
			assert.Equal(t, c.wantAllowed, r.allowed(d), "allowed")
			assert.Equal(t, c.wantStart, r.toStart(c.extras, d, c.ready), "toStart")
			assert.Equal(t, c.wantTooMany, r.tooMany(c.extras, d), "tooMany")
		})
	}
}

func TestNewExtraRule_LeavesRoomForWorkersAndSpares(t *testing.T) {
	o := Options{Workers: 2, MaxWorkers: 10}
	assert.Equal(t, 7, newExtraRule(&o, 1).maxExtras)
	o.MaxWorkers = 2
	assert.Zero(t, newExtraRule(&o, 1).maxExtras, "never below 0")
}

func TestOptions_MaxWorkers(t *testing.T) {
	o := Options{Workers: 3}
	o.EnsureDefaults()
	assert.Equal(t, 192, o.MaxWorkers, "64 per worker")

	o = Options{Workers: 3, MaxWorkers: 1}
	err := o.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MaxWorkers 1 is below Workers 3")
	o = Options{MaxWorkers: -1}
	assert.ErrorContains(t, o.Validate(), "MaxWorkers -1 is negative")

	// Workers left to GOMAXPROCS may exceed an explicit MaxWorkers: raised.
	o = Options{Workers: 0, MaxWorkers: 1}
	require.NoError(t, o.Validate())
	o.EnsureDefaults()
	assert.GreaterOrEqual(t, o.MaxWorkers, o.Workers)
}

// diskTask is a one-step task whose step blocks as a read from a slow disk
// does, telling the pool (or not) around the wait on release.
func diskTask(p *Pool, tell bool, release <-chan struct{}, inStep *atomic.Int64) (*funcTask, chan error) {
	return doneTask(func(*StepContext) Status {
		inStep.Add(1)
		defer inStep.Add(-1)
		if tell {
			p.EnterBlocking()
			defer p.ExitBlocking()
		}
		<-release
		return Ready
	})
}

// TestPool_BlockedStepLetsAQueuedReadRun: with the only worker's step
// blocked in a read it told the pool of, queued tasks run at once on an
// extra worker; with the same step blocked without telling, they wait
// (here until the release: synctest's clock does not move while the test
// waits, so the long-step monitor never fires).
func TestPool_BlockedStepLetsAQueuedReadRun(t *testing.T) {
	for _, tell := range []bool{true, false} {
		name := map[bool]string{true: "told", false: "untold"}[tell]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, Options{Workers: 1, Spares: -1})
				release := make(chan struct{})
				var inStep atomic.Int64
				task, blockedDone := diskTask(p, tell, release, &inStep)
				_, err := p.Spawn(context.Background(), task, SpawnOptions{})
				require.NoError(t, err)
				synctest.Wait()
				require.EqualValues(t, 1, inStep.Load(), "the only worker is in the read")

				var done atomic.Int64
				var dones []chan error
				for range 5 {
					task, d := doneTask(func(*StepContext) Status {
						done.Add(1)
						return Ready
					})
					_, err := p.Spawn(context.Background(), task, SpawnOptions{})
					require.NoError(t, err)
					dones = append(dones, d)
				}
				synctest.Wait()
				st := p.Stats()
				if tell {
					assert.EqualValues(t, 5, done.Load(), "the queued tasks ran beside the blocked step")
					assert.EqualValues(t, 1, st.Blocked)
					assert.Zero(t, st.Extra, "the extra that ran them went idle: nothing left")
				} else {
					assert.Zero(t, done.Load(), "the queued tasks wait for the worker")
					assert.Zero(t, st.Blocked)
				}
				close(release)
				require.NoError(t, <-blockedDone)
				for _, d := range dones {
					require.NoError(t, <-d)
				}
				synctest.Wait()
				st = p.Stats()
				assert.Zero(t, st.Blocked)
				assert.Zero(t, st.Extra, "the extra went idle once the read returned")
				assert.EqualValues(t, 6, st.Completed)
			})
		})
	}
}

// TestPool_BlockedStepsStopAtMaxWorkers: ten tasks that block, on a pool
// of one worker and MaxWorkers 3, run three at a time, and the rest run as
// those return.
func TestPool_BlockedStepsStopAtMaxWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1, MaxWorkers: 3, Spares: -1})
		release := make(chan struct{})
		var inStep atomic.Int64
		var dones []chan error
		for range 10 {
			task, d := diskTask(p, true, release, &inStep)
			_, err := p.Spawn(context.Background(), task, SpawnOptions{})
			require.NoError(t, err)
			dones = append(dones, d)
		}
		synctest.Wait()
		assert.EqualValues(t, 3, inStep.Load(), "MaxWorkers steps, no more")
		st := p.Stats()
		assert.Equal(t, 3, st.Busy)
		assert.Equal(t, 2, st.Extra)
		assert.Equal(t, 7, st.Queued)
		assert.EqualValues(t, 3, st.Blocked)

		close(release)
		for _, d := range dones {
			require.NoError(t, <-d)
		}
		synctest.Wait()
		assert.Zero(t, p.Stats().Extra)
	})
}

// TestPool_EnterBlockingAfterCloseIsHarmless: a read that outlives the pool
// (Pebble's background work) may still tell it.
func TestPool_EnterBlockingAfterCloseIsHarmless(t *testing.T) {
	p, err := New(Options{Workers: 1})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	p.EnterBlocking()
	assert.EqualValues(t, 1, p.Stats().Blocked)
	p.ExitBlocking()
	assert.Zero(t, p.Stats().Extra)
}

// TestPool_BlockingUnderLoad runs tasks of several steps that block (and
// wait for wakes) from many spawners at once, under -race and the pool's
// self-checks: no more than MaxWorkers steps at once, every task done
// once, no slot lost (the last spawns still run), and nothing left after
// Close (goleak, in TestMain).
func TestPool_BlockingUnderLoad(t *testing.T) {
	const maxWorkers = 6
	p, err := New(Options{Workers: 2, MaxWorkers: maxWorkers})
	require.NoError(t, err)
	var inStep, most atomic.Int64
	note := func() func() {
		n := inStep.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		return func() { inStep.Add(-1) }
	}
	var wg sync.WaitGroup
	var ran atomic.Int64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 40 {
				steps := 1 + rng.IntN(3)
				block := rng.IntN(2) == 0
				task, done := doneTask(func(sc *StepContext) Status {
					defer note()()
					if block {
						p.EnterBlocking()
						time.Sleep(20 * time.Microsecond)
						p.ExitBlocking()
					}
					steps--
					if steps == 0 {
						return Ready
					}
					if steps == 1 {
						w := sc.Waker()
						go w.Wake()
						return Pending
					}
					return Yield
				})
				if _, err := p.Spawn(context.Background(), task, SpawnOptions{Inline: rng.IntN(2) == 0, Short: steps == 1}); err != nil {
					continue
				}
				require.NoError(t, <-done)
				ran.Add(1)
			}
		}()
	}
	wg.Wait()
	require.NoError(t, p.Close())
	assert.EqualValues(t, 8*40, ran.Load(), "every task ran")
	assert.LessOrEqual(t, most.Load(), int64(maxWorkers), "workers, the spare and the extras within MaxWorkers")
	assert.Zero(t, p.Stats().Blocked)
}

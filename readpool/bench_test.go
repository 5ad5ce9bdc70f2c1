package readpool

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/ants/v2"
)

// The dispatch benchmarks run b.N no-op tasks from 2 submitters on 2
// workers and report ns per task (wall time / tasks), as the baseline
// program does. Compare them in one run:
//
//	go test -run ^$ -bench 'Dispatch' -benchtime 2000000x ./readpool/

const submitters = 2

func runSubmitters(b *testing.B, submit func()) {
	b.Helper()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range submitters {
		n := b.N / submitters
		if i == 0 {
			n += b.N % submitters
		}
		wg.Go(func() {
			for range n {
				submit()
			}
		})
	}
	wg.Wait()
}

type noopTask struct{ wg *sync.WaitGroup }

func (t *noopTask) Step(*StepContext) Status { return Ready }
func (t *noopTask) Done(error)               { t.wg.Done() }

func benchPool(b *testing.B, q Queue, o SpawnOptions) {
	// MaxTasks 1024 matches the channel pool's buffer: the same backpressure.
	p, err := New(Options{Workers: 2, Queue: q, MaxTasks: 1024})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	var wg sync.WaitGroup
	task := &noopTask{wg: &wg}
	ctx := context.Background()
	var busy atomic.Int64
	wg.Add(b.N)
	runSubmitters(b, func() {
		for {
			err := p.Go(ctx, task, o)
			if err == nil {
				return
			}
			busy.Add(1)
			runtime.Gosched()
		}
	})
	wg.Wait()
	b.StopTimer()
	st := p.Stats()
	b.ReportMetric(float64(st.Inline)/float64(b.N), "inline/task")
	b.ReportMetric(float64(busy.Load())/float64(b.N), "busy/task")
}

func BenchmarkDispatch(b *testing.B) {
	b.Run("pool-mlfq-inline", func(b *testing.B) { benchPool(b, nil, SpawnOptions{Inline: true}) })
	b.Run("pool-mlfq", func(b *testing.B) { benchPool(b, nil, SpawnOptions{}) })
	b.Run("pool-mlfq-inline-short", func(b *testing.B) { benchPool(b, nil, SpawnOptions{Inline: true, Short: true}) })
	// Point reads (as a Get spawns them), which MLFQ workers take in
	// batches (Batcher).
	b.Run("pool-mlfq-short", func(b *testing.B) { benchPool(b, nil, SpawnOptions{Short: true}) })
	b.Run("pool-fifo", func(b *testing.B) { benchPool(b, NewFIFO(), SpawnOptions{}) })
	b.Run("pool-steal", func(b *testing.B) { benchPool(b, NewWorkStealing(), SpawnOptions{}) })
	b.Run("chan-pool", func(b *testing.B) {
		ch := make(chan func(), 1024)
		var workers sync.WaitGroup
		for range 2 {
			workers.Go(func() {
				for f := range ch {
					f()
				}
			})
		}
		var wg sync.WaitGroup
		f := func() { wg.Done() }
		wg.Add(b.N)
		runSubmitters(b, func() { ch <- f })
		wg.Wait()
		b.StopTimer()
		close(ch)
		workers.Wait()
	})
	b.Run("ants", func(b *testing.B) {
		p, err := ants.NewPool(2)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = p.ReleaseTimeout(5 * time.Second) }()
		var wg sync.WaitGroup
		f := func() { wg.Done() }
		wg.Add(b.N)
		runSubmitters(b, func() {
			if err := p.Submit(f); err != nil {
				b.Error(err)
				wg.Done()
			}
		})
		wg.Wait()
	})
	b.Run("go-f", func(b *testing.B) {
		var wg sync.WaitGroup
		f := func() { wg.Done() }
		wg.Add(b.N)
		runSubmitters(b, func() { go f() })
		wg.Wait()
	})
}

// longTask spins in units of ~10 µs, asking ShouldYield before each, until
// it has run total; it respawns itself when done, so a fixed number of long
// tasks stays live.
type longTask struct {
	p     *Pool
	total time.Duration
	used  time.Duration
	stop  *atomic.Bool
	wg    *sync.WaitGroup
}

func spin(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

func (t *longTask) Step(sc *StepContext) Status {
	for !sc.ShouldYield() {
		if t.used >= t.total || t.stop.Load() {
			return Ready
		}
		spin(10 * time.Microsecond)
		t.used += 10 * time.Microsecond
	}
	return Yield
}

func (t *longTask) Done(err error) {
	if err == nil && !t.stop.Load() {
		next := &longTask{p: t.p, total: t.total, stop: t.stop, wg: t.wg}
		if _, err := t.p.Spawn(context.Background(), next, SpawnOptions{}); err == nil {
			return
		}
	}
	t.wg.Done()
}

type shortTask struct {
	spawned time.Time
	started time.Time
	done    chan struct{}
}

func (t *shortTask) Step(*StepContext) Status { t.started = time.Now(); return Ready }
func (t *shortTask) Done(error)               { close(t.done) }

// BenchmarkShortBesideLong runs 16 long tasks (50 ms each, stepping 1 ms
// at a time, respawned as they finish) on 2 workers while 2 submitters,
// sleeping 200 µs between tasks, spawn b.N short tasks. It reports the
// short tasks' queue wait (spawn to first step) and their end-to-end time
// from the end of the submitter's pause, which also counts how late the
// submitter itself was scheduled.
//
//	go test -run ^$ -bench ShortBesideLong -benchtime 4000x ./readpool/
func BenchmarkShortBesideLong(b *testing.B) {
	for _, c := range []struct {
		name    string
		q       func() Queue
		gosched time.Duration
	}{
		{"mlfq", func() Queue { return NewMLFQ(MLFQOptions{}) }, 0},
		{"fifo", func() Queue { return NewFIFO() }, 0},
		{"mlfq-no-gosched", func() Queue { return NewMLFQ(MLFQOptions{}) }, time.Hour},
	} {
		b.Run(c.name, func(b *testing.B) {
			p, err := New(Options{Workers: 2, Queue: c.q(), goschedEvery: c.gosched})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			var stop atomic.Bool
			var longs sync.WaitGroup
			for range 16 {
				longs.Add(1)
				if _, err := p.Spawn(context.Background(), &longTask{p: p, total: 50 * time.Millisecond, stop: &stop, wg: &longs}, SpawnOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			time.Sleep(20 * time.Millisecond) // let the long tasks sink
			waits := make([][]time.Duration, submitters)
			e2es := make([][]time.Duration, submitters)
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range submitters {
				n := b.N / submitters
				wg.Go(func() {
					for range n {
						due := time.Now().Add(200 * time.Microsecond)
						time.Sleep(200 * time.Microsecond)
						t := &shortTask{spawned: time.Now(), done: make(chan struct{})}
						if _, err := p.Spawn(context.Background(), t, SpawnOptions{}); err != nil {
							b.Error(err)
							return
						}
						<-t.done
						waits[i] = append(waits[i], t.started.Sub(t.spawned))
						e2es[i] = append(e2es[i], time.Since(due))
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			stop.Store(true)
			longs.Wait()
			report := func(all [][]time.Duration, unit string) {
				v := slices.Concat(all...)
				if len(v) == 0 {
					return
				}
				slices.Sort(v)
				b.ReportMetric(float64(v[len(v)/2].Microseconds()), unit+"-p50-µs")
				b.ReportMetric(float64(v[len(v)*99/100].Microseconds()), unit+"-p99-µs")
			}
			report(waits, "wait")
			report(e2es, "e2e")
			st := p.Stats()
			b.ReportMetric(st.Queue.Level0Share, "level0-share")
		})
	}
}

// BenchmarkGoschedIdle is the cost a worker pays for handing its P back
// when nothing else is runnable: workers do it once per quarter slice of
// step time (every 250 µs by default), so ns/op ÷ 250 µs is its overhead.
func BenchmarkGoschedIdle(b *testing.B) {
	for range b.N {
		runtime.Gosched()
	}
}

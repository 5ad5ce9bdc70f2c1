package main

import (
	"context"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// A phase's timeline (--timeline): the operations completed in each whole
// second since the phase began, and two figures drawn from it, the rate in
// the first five seconds and the steady rate, whose ratio says how long a
// store takes to reach its pace (issue 41's restart mode, --reopen).
//
// An operation is what go-ycsb's client counts against operationcount:
// one call of the workload's DoInsert or DoTransaction (a batch call
// counts its batch), failed or not. So F's read-modify-write counts once,
// not as the READ and UPDATE halves that go-ycsb's measurement also
// records. countingWorkload counts each call as it returns, just after
// go-ycsb measured its latency; a sampler goroutine reads the count at
// every whole second of the phase (timelineSampler); perSecond turns the
// samples into the timeline. The three are apart so that the arithmetic is
// tested without goroutines and the sampler without a clock of its own
// (testing/synctest).

// firstSpan is the span at the phase's start whose rate is first5s.
const firstSpan = 5 * time.Second

// countingWorkload is a go-ycsb workload that counts the operations its
// calls complete, in done.
type countingWorkload struct {
	ycsb.Workload
	// done is read by the sampler while the client's threads add to it:
	// an atomic, whose Load sees every Add that returned before it.
	done *atomic.Int64
}

func (w countingWorkload) DoInsert(ctx context.Context, db ycsb.DB) error {
	defer w.done.Add(1)
	return w.Workload.DoInsert(ctx, db)
}

func (w countingWorkload) DoBatchInsert(ctx context.Context, batchSize int, db ycsb.DB) error {
	defer w.done.Add(int64(batchSize))
	return w.Workload.DoBatchInsert(ctx, batchSize, db)
}

func (w countingWorkload) DoTransaction(ctx context.Context, db ycsb.DB) error {
	defer w.done.Add(1)
	return w.Workload.DoTransaction(ctx, db)
}

func (w countingWorkload) DoBatchTransaction(ctx context.Context, batchSize int, db ycsb.DB) error {
	defer w.done.Add(int64(batchSize))
	return w.Workload.DoBatchTransaction(ctx, batchSize, db)
}

// sample is the count of operations done at a time into the phase.
type sample struct {
	at  time.Duration
	ops int64
}

// timelineSampler reads a count of operations at every whole second from
// its start, until end.
type timelineSampler struct {
	done  *atomic.Int64
	start time.Time
	stop  chan struct{}
	// exited is closed as the sampler's goroutine returns; samples are
	// its, then end's (the close orders the two).
	exited  chan struct{}
	samples []sample
}

// startTimeline starts a sampler of done, which counts from 0 at start,
// the phase's start.
func startTimeline(done *atomic.Int64, start time.Time) *timelineSampler {
	s := &timelineSampler{done: done, start: start, stop: make(chan struct{}), exited: make(chan struct{})}
	go s.loop()
	return s
}

// loop samples at each whole second from the start. A timer set for the
// next whole second each time, not a ticker: a ticker drops ticks that a
// late goroutine cannot take, and drifts by its lateness; a sample taken
// late is still exact for the time it was taken at, and perSecond
// interpolates between samples.
func (s *timelineSampler) loop() {
	defer close(s.exited)
	next := time.Second
	t := time.NewTimer(time.Until(s.start.Add(next)))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ops := s.done.Load()
		at := time.Since(s.start)
		s.samples = append(s.samples, sample{at: at, ops: ops})
		for next <= at {
			next += time.Second
		}
		t.Reset(next - at)
	}
}

// phaseTimeline is a phase's timeline and the figures drawn from it.
type phaseTimeline struct {
	// perSecond are the operations completed in each whole second from
	// the phase's start; tail those in the part of a second after the
	// last whole one. They sum to the phase's operations.
	perSecond []float64
	tail      float64
	// first5s is the operations in the first 5 s ÷ 5, steady the median
	// of the per-second rates over the phase's second half; 0 where the
	// phase is too short for them (see timelineFigures).
	first5s, steady float64
}

// end stops the sampler and returns the timeline of a phase that lasted
// elapsed from the start given to startTimeline, every operation of it
// done. The sampler's goroutine has ended when end returns.
func (s *timelineSampler) end(elapsed time.Duration) phaseTimeline {
	close(s.stop)
	<-s.exited
	// A sample taken after the phase ended, while end was on its way,
	// counts what the last sample below counts.
	samples := slices.DeleteFunc(s.samples, func(sm sample) bool { return sm.at >= elapsed })
	samples = append(samples, sample{at: elapsed, ops: s.done.Load()})
	var tl phaseTimeline
	tl.perSecond, tl.tail = perSecond(samples)
	tl.first5s, tl.steady = timelineFigures(tl.perSecond, elapsed)
	return tl
}

// perSecond returns the operations done in each whole second up to the
// last sample, and those done after the last whole second (tail), from
// samples of a count that was 0 at time 0, in order of time. The count at
// a whole second between two samples is interpolated linearly between
// them: samples taken on time make that exact to the sampler's lateness
// (microseconds), and a sample that came more than a second late spreads
// its operations evenly over the seconds it spans. The seconds and the tail
// sum to the last sample's count.
func perSecond(samples []sample) (seconds []float64, tail float64) {
	if len(samples) == 0 {
		return []float64{}, 0
	}
	last := samples[len(samples)-1]
	n := int(last.at / time.Second)
	// Not nil when n is 0: a timeline, of no whole second.
	seconds = make([]float64, n)
	prev := sample{} // the count at time 0
	i := 0           // the first sample at or after second k
	var before float64
	for k := 1; k <= n; k++ {
		at := time.Duration(k) * time.Second
		for samples[i].at < at {
			prev = samples[i]
			i++
		}
		next := samples[i]
		cum := float64(next.ops)
		if next.at > at {
			frac := float64(at-prev.at) / float64(next.at-prev.at)
			cum = float64(prev.ops) + frac*float64(next.ops-prev.ops)
		}
		seconds[k-1] = cum - before
		before = cum
	}
	return seconds, float64(last.ops) - before
}

// timelineFigures returns first5s, the operations in the first 5 s of a
// phase ÷ 5, and steady, the median of the per-second rates of the whole
// seconds that start in the phase's second half, for a phase that lasted
// elapsed with the timeline seconds. Each is 0 when the phase had no
// second for it: first5s wants 5 whole seconds, steady a whole second
// starting at or after elapsed/2. In a phase under 10 s the two spans
// overlap.
func timelineFigures(seconds []float64, elapsed time.Duration) (first5s, steady float64) {
	if n := int(firstSpan / time.Second); len(seconds) >= n {
		var sum float64
		for _, v := range seconds[:n] {
			sum += v
		}
		first5s = sum / firstSpan.Seconds()
	}
	from := int(math.Ceil(elapsed.Seconds() / 2))
	if from < len(seconds) {
		steady = median(seconds[from:])
	}
	return first5s, steady
}

// median is the middle value of vs (the mean of the two middle ones for an
// even count); vs is not changed.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

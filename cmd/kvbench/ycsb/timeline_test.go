package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPerSecond(t *testing.T) {
	const s = time.Second
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name    string
		samples []sample // the last one is the phase's end
		want    []float64
		tail    float64
	}{
		{"none", nil, []float64{}, 0},
		{"under a second", []sample{{ms(400), 7}}, []float64{}, 7},
		{"on time", []sample{{1 * s, 10}, {2 * s, 30}, {3 * s, 60}, {ms(3500), 70}}, []float64{10, 20, 30}, 10},
		{"ends on a whole second", []sample{{1 * s, 10}, {2 * s, 30}}, []float64{10, 20}, 0},
		// 100 ops/s throughout, sampled late: the interpolation is exact.
		{"late", []sample{{ms(1100), 110}, {ms(2050), 205}, {ms(2500), 250}}, []float64{100, 100}, 50},
		// A sampler a second and a half late spreads what it found evenly
		// over the seconds it spans.
		{"a second skipped", []sample{{1 * s, 100}, {ms(3500), 350}, {4 * s, 400}}, []float64{100, 100, 100, 100}, 0},
		// The end fell after a whole second that no sample took.
		{"end after an untaken second", []sample{{1 * s, 100}, {ms(2500), 400}}, []float64{100, 200}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, tail := perSecond(tc.samples)
			require.NotNil(t, got, "a timeline, if of no whole second")
			assert.InDeltaSlice(t, tc.want, got, 1e-9)
			assert.InDelta(t, tc.tail, tail, 1e-9)
			if len(tc.samples) > 0 {
				sum := tail
				for _, v := range got {
					sum += v
				}
				assert.InDelta(t, float64(tc.samples[len(tc.samples)-1].ops), sum, 1e-9, "the seconds and the tail sum to the count")
			}
		})
	}
}

func TestTimelineFigures(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name            string
		seconds         []float64
		elapsed         time.Duration
		first5s, steady float64
	}{
		// Seconds 6–9 start after 5.25 s: median of 10, 12, 10, 10.
		{"warming", []float64{1, 2, 3, 4, 5, 10, 10, 12, 10, 10}, ms(10500), 3, 10},
		// Seconds 5–9 start at or after 5 s: an odd count.
		{"whole seconds", []float64{2, 2, 2, 2, 2, 4, 6, 5, 7, 8}, ms(10000), 2, 6},
		{"under 5 s", []float64{4, 8, 6, 7}, ms(4200), 0, 7},
		{"under 3 s", []float64{4, 8}, ms(2500), 0, 0},
		{"no second", []float64{}, ms(300), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first5s, steady := timelineFigures(tc.seconds, tc.elapsed)
			assert.InDelta(t, tc.first5s, first5s, 1e-9)
			assert.InDelta(t, tc.steady, steady, 1e-9)
		})
	}
	assert.InDelta(t, 2.5, median([]float64{4, 1, 3, 2}), 1e-9, "an even count: the mean of the middle two")
}

// The sampler counts the operations of each whole second, and its
// goroutine has ended when end returns. Time is synctest's: the sampler
// runs at exactly each whole second, and the operations come between.
func TestTimelineSampler_CountsEachSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done atomic.Int64
		start := time.Now()
		s := startTimeline(&done, start)
		// k+1 operations at 0.1, 0.35, 0.6 and 0.85 s into second k.
		time.Sleep(100 * time.Millisecond)
		for k := range 4 {
			for range 4 {
				done.Add(int64(k + 1))
				time.Sleep(250 * time.Millisecond)
			}
		}
		done.Add(3) // at 4.1 s
		time.Sleep(200 * time.Millisecond)
		tl := s.end(time.Since(start))
		select {
		case <-s.exited:
		default:
			t.Fatal("the sampler's goroutine runs on after end")
		}

		assert.Equal(t, []float64{4, 8, 12, 16}, tl.perSecond)
		assert.InDelta(t, 3.0, tl.tail, 1e-9)
		assert.Zero(t, tl.first5s, "under 5 s")
		assert.InDelta(t, 16.0, tl.steady, 1e-9, "the one whole second that starts after 4.3 s ÷ 2")
	})
}

// A phase shorter than a second has no whole second: its operations are
// all in the tail.
func TestTimelineSampler_ShortPhase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done atomic.Int64
		start := time.Now()
		s := startTimeline(&done, start)
		done.Add(42)
		time.Sleep(300 * time.Millisecond)
		tl := s.end(time.Since(start))
		assert.Equal(t, []float64{}, tl.perSecond)
		assert.InDelta(t, 42.0, tl.tail, 1e-9)
	})
}

// stubWorkload is a go-ycsb workload whose calls do nothing but fail when
// told to.
type stubWorkload struct {
	ycsb.Workload
	err error
}

func (w stubWorkload) DoInsert(context.Context, ycsb.DB) error                { return w.err }
func (w stubWorkload) DoBatchInsert(context.Context, int, ycsb.DB) error      { return w.err }
func (w stubWorkload) DoTransaction(context.Context, ycsb.DB) error           { return w.err }
func (w stubWorkload) DoBatchTransaction(context.Context, int, ycsb.DB) error { return w.err }

// countingWorkload counts an operation per call, a batch's size per batch
// call, failed or not, as go-ycsb's client counts them against
// operationcount.
func TestCountingWorkload(t *testing.T) {
	ctx := t.Context()
	failed := errors.New("failed")
	for _, err := range []error{nil, failed} {
		var done atomic.Int64
		w := countingWorkload{Workload: stubWorkload{err: err}, done: &done}
		assert.Equal(t, err, w.DoInsert(ctx, nil))
		assert.Equal(t, err, w.DoTransaction(ctx, nil))
		assert.Equal(t, err, w.DoBatchInsert(ctx, 10, nil))
		assert.Equal(t, err, w.DoBatchTransaction(ctx, 5, nil))
		assert.Equal(t, int64(17), done.Load(), "err %v", err)
	}
}

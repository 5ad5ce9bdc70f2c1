package main

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// class is a kind of operation, reported apart from the others.
type class int

const (
	classGet class = iota
	classScan
	classUpdate
	classInsert
	classRMW
	classCop
	numClasses
)

var classNames = [numClasses]string{"get", "scan", "update", "insert", "rmw", "cop"}

func (c class) String() string { return classNames[c] }

// The histograms' range: latencies are recorded in nanoseconds with three
// significant digits, and clamped into [histMin, histMax] so that an
// outlier is counted at the edge instead of dropped.
const (
	histMin    = int64(1)
	histMax    = int64(time.Hour)
	histDigits = 3
)

// classStats is what one client (or, merged, every client) saw of one
// class: the latencies of the operations that succeeded and the count of
// those that failed.
type classStats struct {
	hist     *hdrhistogram.Histogram
	errors   int64
	firstErr error // kept to tell the user what went wrong
}

func newClassStats() *classStats {
	return &classStats{hist: hdrhistogram.New(histMin, histMax, histDigits)}
}

// recorder collects one client goroutine's operations. hdrhistogram is
// not safe for concurrent use, so each client has its own recorder and the
// recorders are merged when the phase is over.
type recorder struct {
	classes [numClasses]*classStats // nil until the class is recorded
}

// record counts one operation of class c that took d, or failed with err.
func (r *recorder) record(c class, d time.Duration, err error) {
	cs := r.classes[c]
	if cs == nil {
		cs = newClassStats()
		r.classes[c] = cs
	}
	if err != nil {
		cs.errors++
		if cs.firstErr == nil {
			cs.firstErr = err
		}
		return
	}
	// Out of range is impossible after clamping, so the error is nil.
	_ = cs.hist.RecordValue(min(max(int64(d), histMin), histMax))
}

// mergeRecorders returns, per class, the sum of what recs saw.
func mergeRecorders(recs []*recorder) *recorder {
	out := &recorder{}
	for _, r := range recs {
		for c, cs := range r.classes {
			if cs == nil {
				continue
			}
			m := out.classes[c]
			if m == nil {
				m = newClassStats()
				out.classes[c] = m
			}
			m.hist.Merge(cs.hist) // same range: nothing is dropped
			m.errors += cs.errors
			if m.firstErr == nil {
				m.firstErr = cs.firstErr
			}
		}
	}
	return out
}

// summary is a class's figures over one measured phase.
type summary struct {
	ops                 int64
	opsPerSec           float64
	p50, p99, p999, max time.Duration
	errors              int64
	firstErr            error
}

// summarize returns c's figures for a phase that lasted elapsed; a class
// that was never recorded has zero ops.
func (r *recorder) summarize(c class, elapsed time.Duration) summary {
	cs := r.classes[c]
	if cs == nil {
		return summary{}
	}
	h := cs.hist
	s := summary{ops: h.TotalCount(), errors: cs.errors, firstErr: cs.firstErr}
	if elapsed > 0 {
		s.opsPerSec = float64(s.ops) / elapsed.Seconds()
	}
	if s.ops > 0 {
		s.p50 = time.Duration(h.ValueAtQuantile(50))
		s.p99 = time.Duration(h.ValueAtQuantile(99))
		s.p999 = time.Duration(h.ValueAtQuantile(99.9))
		s.max = time.Duration(h.Max())
	}
	return s
}

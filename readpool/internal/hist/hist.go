// Package hist is a fixed-size, lock-free latency histogram for the read
// pool's hot path: recording is one atomic add, memory is constant, and a
// snapshot gives p50, p99 and max. Buckets are log-linear (8 per power of
// two, so a quantile is within 12.5% of the true value), in the manner of
// HdrHistogram but goroutine-safe, which HdrHistogram is not.
package hist

import (
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	subBits  = 3
	subCount = 1 << subBits
	nBuckets = (64-subBits)*subCount + subCount
)

// Histogram records durations. The zero value is ready to use. Record and
// Snapshot may be called concurrently.
type Histogram struct {
	counts [nBuckets]atomic.Uint64
	max    atomic.Int64
	sum    atomic.Int64 // nanoseconds, for Prometheus's _sum
}

func bucket(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	sub := int(v>>uint(shift)) & (subCount - 1)
	return (shift+1)*subCount + sub
}

// upper returns the largest value that falls into bucket i.
func upper(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	shift := i/subCount - 1
	sub := uint64(i % subCount)
	return ((subCount+sub+1)<<uint(shift) - 1)
}

// Record adds one observation; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucket(uint64(d))].Add(1)
	h.sum.Add(int64(d))
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// Summary is a point-in-time digest of a histogram.
type Summary struct {
	Count uint64        `json:"count"`
	Sum   time.Duration `json:"sum_ns"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
	// Below counts, for each of PowerOfTwoBounds, the observations below
	// it; from the same reading as Count, so never more than Count.
	Below []uint64 `json:"-"`
}

// Merge adds the counts of o into h (used to combine per-worker histograms).
func (h *Histogram) Merge(o *Histogram) {
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.sum.Add(o.sum.Load())
	if m := o.max.Load(); m > h.max.Load() {
		h.max.Store(m)
	}
}

// Summary computes the quantiles. Concurrent records may or may not be seen.
func (h *Histogram) Summary() Summary {
	var counts [nBuckets]uint64
	var total uint64
	for i := range h.counts {
		counts[i] = h.counts[i].Load()
		total += counts[i]
	}
	s := Summary{Count: total, Sum: time.Duration(h.sum.Load()), Max: time.Duration(h.max.Load()), Below: below(&counts)}
	if total == 0 {
		return s
	}
	s.P50 = quantile(&counts, total, 0.50, s.Max)
	s.P99 = quantile(&counts, total, 0.99, s.Max)
	return s
}

func quantile(counts *[nBuckets]uint64, total uint64, q float64, max time.Duration) time.Duration {
	rank := uint64(q*float64(total) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			v := time.Duration(upper(i))
			if v > max {
				v = max
			}
			return v
		}
	}
	return max
}

// PowerOfTwoBounds are the bounds Below reports: 2^10 ns (≈1 µs) to 2^34 ns
// (≈17 s). Each is a bucket boundary, so the counts below them are exact.
var PowerOfTwoBounds = func() []time.Duration {
	var b []time.Duration
	for n := 10; n <= 34; n++ {
		b = append(b, time.Duration(1)<<n)
	}
	return b
}()

// below returns, for each of PowerOfTwoBounds, how many of counts' values
// are below it (cumulative, as Prometheus histograms count).
func below(counts *[nBuckets]uint64) []uint64 {
	out := make([]uint64, len(PowerOfTwoBounds))
	var seen uint64
	b := 0
	for i, c := range counts {
		// Bucket i holds values up to upper(i); once that reaches a bound,
		// every value below the bound has been seen.
		for b < len(out) && upper(i) >= uint64(PowerOfTwoBounds[b]) {
			out[b] = seen
			b++
		}
		seen += c
	}
	for ; b < len(out); b++ {
		out[b] = seen
	}
	return out
}

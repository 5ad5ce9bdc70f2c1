// Package ewma is the moving average the read pool and the store keep of
// durations — steps, waits, table reads: exponentially weighted, 1/8 on
// the newest sample (about the last dozen count), in one atomic word.
package ewma

import (
	"sync/atomic"
	"time"
)

// shift sets the newest sample's weight: 1/2^shift.
const shift = 3

// Next is the average after sample d, from avg.
func Next(avg, d time.Duration) time.Duration { return avg + (d-avg)>>shift }

// Duration is a moving average of durations, updated with a load and a
// store: exact with one writer; writers that race lose a sample, which only
// makes the average a little slower to move. The zero value has seen
// nothing (0).
type Duration struct{ ns atomic.Int64 }

// Record adds sample d.
func (a *Duration) Record(d time.Duration) { a.ns.Store(int64(Next(a.Load(), d))) }

// Load returns the average.
func (a *Duration) Load() time.Duration { return time.Duration(a.ns.Load()) }

// Store sets the average to d, for a test's or a restart's starting point.
func (a *Duration) Store(d time.Duration) { a.ns.Store(int64(d)) }

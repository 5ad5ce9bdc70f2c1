// Package stripe is a counter that many goroutines add to at once without
// sharing a cache line: an add goes to one of its stripes, picked by a hint
// the caller already has (a key's hash, a per-P object's address), and a
// read sums them, as Pebble's block cache counts per shard.
package stripe

import "sync/atomic"

// n is the number of stripes: a few per core on the machines the store
// runs on; a read sums them all.
const n = 8

// Counter is a striped int64 counter. The zero value is 0.
type Counter struct {
	s [n]struct {
		v atomic.Int64
		_ [56]byte // a cache line each
	}
}

// Add adds d to the stripe hint picks: callers with different hints
// mostly touch different cache lines.
func (c *Counter) Add(hint uint64, d int64) { c.s[hint%n].v.Add(d) }

// Load returns the sum of the stripes: exact once the adds have returned,
// a moment's snapshot while they run.
func (c *Counter) Load() int64 {
	var sum int64
	for i := range c.s {
		sum += c.s[i].v.Load()
	}
	return sum
}

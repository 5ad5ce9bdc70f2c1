//go:build race

package kv

// raceEnabled: the race detector allocates, so allocation counts mean
// nothing under it.
const raceEnabled = true

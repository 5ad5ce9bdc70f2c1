//go:build race

package scan

// raceEnabled: Pebble checks its invariants under the race detector, and
// allocates for them, so allocation counts mean nothing there.
const raceEnabled = true

//go:build race

package record

// raceEnabled says the tests run under the race detector, whose sync.Pool
// drops a quarter of what is put back: allocation counts mean nothing there.
const raceEnabled = true

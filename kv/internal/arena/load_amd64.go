//go:build unix

package arena

import "unsafe"

// loadRun copies len(b) bytes from p, inside one chunk, into b. On amd64
// (total store order) loads are not reordered with later loads, so a
// plain copy is ordered before the reader's atomic load of the generation
// as the word loads are, at a third of their cost (YCSB C: the word loop
// was half of Arena.Get). The mapping is off the Go heap, where the race
// detector does not look.
func loadRun(p unsafe.Pointer, b []byte) {
	copy(b, unsafe.Slice((*byte)(p), len(b)))
}

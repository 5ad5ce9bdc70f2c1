//go:build !amd64 || !unix

package arena

import "unsafe"

// loadRun copies len(b) bytes from p, inside one chunk, into b, word by
// word with atomic loads: where loads may be reordered (arm64), and on the
// heap fallback, which the race detector watches.
func loadRun(p unsafe.Pointer, b []byte) { loadRunWords(p, b) }

// storeRun writes b into the chunk at p, inside one chunk, its last word
// padded with zeros, word by word with atomic stores (see loadRun).
func storeRun(p unsafe.Pointer, b []byte) { storeRunWords(p, b) }

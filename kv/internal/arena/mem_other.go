//go:build !unix

package arena

// mapMemory falls back to the Go heap where anonymous mappings are not to
// hand: the arena still works, and its bytes are then the collector's (it
// allocates a pointer-free slice, which it does not scan).
func mapMemory(n int) ([]byte, func() error, error) {
	return make([]byte, n), func() error { return nil }, nil
}

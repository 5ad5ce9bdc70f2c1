//go:build unix

package arena

import "unsafe"

// loadRun copies len(b) bytes from p, inside one chunk, into b. On amd64
// (total store order) loads are not reordered with later loads, so a
// plain copy is ordered before the reader's atomic load of the generation
// as the word loads are, at a fraction of their cost. The mapping is off
// the Go heap, where the race
// detector does not look.
func loadRun(p unsafe.Pointer, b []byte) {
	copy(b, unsafe.Slice((*byte)(p), len(b)))
}

// storeRun writes b into the chunk at p, inside one chunk, its last word
// padded with zeros. On amd64 (total store order) stores are not
// reordered with later stores, so a plain copy is ordered before the
// entry's publication (its Ref, handed out after Put) as the word stores
// were, without the full fence each atomic store costs there.
// A reader that still holds a Ref of the chunk's last life may read the
// words as they change; its second look at the generation, which Free
// moved before the chunk was reused, throws that read away.
func storeRun(p unsafe.Pointer, b []byte) {
	dst := unsafe.Slice((*byte)(p), (len(b)+7)&^7)
	clear(dst[copy(dst, b):])
}

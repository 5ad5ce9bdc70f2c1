// Package arena holds the row cache's keys and values off the Go heap.
//
// Go's collector lets the heap grow to about twice what is live before it
// collects, so a cache of 256 MiB of values on the heap costs ~512 MiB of
// RSS, and a cache sized like the block cache, to a share of the memory
// budget, would double it. An Arena is one mapping of anonymous memory,
// which the collector neither scans nor counts: a cache of size n costs n
// (and only the pages it has used).
//
// The arena is cut into chunks of ChunkSize bytes; an entry — a key and its
// value — takes a chain of them, so an entry of any size fits in any free
// chunks and the arena never fragments into sizes nobody asks for (a slab
// allocator with size classes can run out of one class with others free).
// The admission and eviction policy is the caller's (the row cache's
// ristretto): an entry lives from Put until Free.
//
// # Reading beside frees (a seqlock)
//
// A reader finds an entry through a Ref it got from the policy, which may
// be freed, and its chunks reused, while the reader copies it. Each head
// chunk carries a generation, which Put moves before it writes the entry
// and Free before the chunks go back to the free list; a Ref names the
// head and the generation Put left. Get checks the generation, copies, and
// checks it again: if the entry was freed in between, the copy is thrown
// away and Get reports a miss, so an eviction racing a hit costs a miss,
// never a wrong value. Keys, which lists the entries by a bit per head
// chunk (set by Put, cleared by Free), reads each key the same way. The
// chunks' headers (generation, link) are atomic words. Their
// data runs are copied as atomic words where the hardware may reorder
// (loadRun, storeRun), so the copy is ordered before the second check and
// a Put's words before its publication; on amd64, whose stores and loads
// are not reordered among themselves, as plain copies, at a fraction of
// the cost. The mapping is off the Go heap, where the race detector does
// not look; the heap fallback of other systems uses the atomic words.
package arena

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

const (
	// ChunkSize is the unit of allocation: a chunk holds its head's
	// generation, the index of the next chunk of its entry, and 120 bytes of
	// the entry. 128 bytes wastes ~5% on 1 KiB values and leaves ~8% of the
	// arena to the chunk headers.
	ChunkSize = 128
	// MaxEntry is the largest key plus value an arena takes: a value past
	// it is not worth a row cache (the block cache holds it anyway), and
	// the bound keeps a reader's walk short.
	MaxEntry = 1 << 20

	headerSize = 8                            // a chunk's generation and next index
	chunkWords = (ChunkSize - headerSize) / 8 // data words per chunk
	maxChunks  = 1<<32 - 1                    // indexes are uint32; 0 is none
)

// ErrSize is returned by New for a size that holds no chunk, or one past
// what 32-bit chunk indexes can address (512 GiB).
var ErrSize = errors.New("arena: size out of range")

// Ref names an entry: its head chunk's index (high 32 bits) and the head's
// generation at Put (low 32). The zero Ref names nothing.
type Ref uint64

func (r Ref) head() uint32 { return uint32(r >> 32) }
func (r Ref) gen() uint32  { return uint32(r) }

// Arena is a fixed-size store of entries off the Go heap. Its methods are
// safe for concurrent use, except Close, which no other call may overlap.
type Arena struct {
	mem    []byte         // the mapping
	base   unsafe.Pointer // &mem[0]
	chunks uint32         // chunks in mem, index 0 unused
	unmap  func() error

	mu   sync.Mutex
	free uint32 // the free list's head (linked through next), 0 = empty
	nfree,
	bump uint32 // the first chunk never used: pages past it are untouched

	used atomic.Int64 // chunks held by entries

	// heads has a bit per chunk, set while the chunk heads a live entry
	// (from Put to Free), so that Keys can list the entries.
	heads []atomic.Uint64
}

// New maps an arena of size bytes. The memory is reserved, not used: the
// operating system gives the pages as chunks are first used, and an arena
// reuses freed chunks before it touches new ones, so its RSS is its high
// water mark, never more than size.
func New(size int64) (*Arena, error) {
	n := size / ChunkSize
	if n < 2 || n > maxChunks {
		return nil, fmt.Errorf("%w: %d bytes", ErrSize, size)
	}
	mem, unmap, err := mapMemory(int(n) * ChunkSize)
	if err != nil {
		return nil, fmt.Errorf("arena: map %d bytes: %w", n*ChunkSize, err)
	}
	return &Arena{mem: mem, base: unsafe.Pointer(&mem[0]), chunks: uint32(n), unmap: unmap, bump: 1,
		heads: make([]atomic.Uint64, (n+63)/64)}, nil
}

// Close unmaps the arena. No other call may run during or after it.
func (a *Arena) Close() error {
	if a.unmap == nil {
		return nil
	}
	err := a.unmap()
	a.unmap, a.mem, a.base = nil, nil, nil
	return err
}

// Capacity is the bytes of entries the arena can hold, chunk headers
// included.
func (a *Arena) Capacity() int64 { return int64(a.chunks-1) * ChunkSize }

// InUse is the bytes of the chunks entries hold now.
func (a *Arena) InUse() int64 { return a.used.Load() * ChunkSize }

// Cost is what an entry of a key of klen bytes and a value of vlen bytes
// takes of an arena, in bytes (its chunks), or -1 if it does not fit one.
func Cost(klen, vlen int) int64 {
	if klen+vlen > MaxEntry {
		return -1
	}
	return int64(chunksFor(klen, vlen)) * ChunkSize
}

// chunksFor is the chunks an entry takes: a header word (the lengths), then
// the key and the value, each from a word boundary.
func chunksFor(klen, vlen int) int {
	words := 1 + (klen+7)/8 + (vlen+7)/8
	return (words + chunkWords - 1) / chunkWords
}

// Put copies key and val into free chunks and returns their Ref and cost;
// ok is false when the entry is larger than MaxEntry or the arena has no
// room for it (the caller then does not cache it).
func (a *Arena) Put(key, val []byte) (r Ref, cost int64, ok bool) {
	if len(key)+len(val) > MaxEntry {
		return 0, 0, false
	}
	n := chunksFor(len(key), len(val))
	head, ok := a.alloc(n)
	if !ok {
		return 0, 0, false
	}
	// A new generation before the words: Keys, which finds heads by their
	// bit rather than by a Ref, sees the chunk change under it.
	a.genOf(head).Add(1)
	w := cursor{a: a, chunk: head}
	w.store(uint64(len(key)) | uint64(len(val))<<32)
	w.storeBytes(key)
	w.storeBytes(val)
	a.heads[head/64].Or(1 << (head % 64))
	return Ref(uint64(head)<<32 | uint64(a.genOf(head).Load())), int64(n) * ChunkSize, true
}

// Keys calls fn with a copy of the key of each live entry, until fn
// returns false. Entries put or freed meanwhile may be listed or not; a
// key is never one no entry had (each is read as Get reads a value,
// between two looks at its head's generation).
func (a *Arena) Keys(fn func(key []byte) bool) {
	for w := range a.heads {
		for set := a.heads[w].Load(); set != 0; set &= set - 1 {
			head := uint32(w*64 + bits.TrailingZeros64(set))
			if key, ok := a.keyAt(head); ok && !fn(key) {
				return
			}
		}
	}
}

// keyAt reads the key of the entry headed by chunk head, if one is there:
// the chunk heads a live entry before the copy and after it, under the
// same generation (Put and Free each move it).
func (a *Arena) keyAt(head uint32) ([]byte, bool) {
	gen := a.genOf(head).Load()
	if !a.isHead(head) {
		return nil, false
	}
	c := cursor{a: a, chunk: head}
	lens, ok := c.load()
	klen, vlen := int(uint32(lens)), int(lens>>32)
	if !ok || klen+vlen > MaxEntry {
		return nil, false
	}
	key := make([]byte, klen)
	if !c.loadBytes(key) || a.genOf(head).Load() != gen || !a.isHead(head) {
		return nil, false
	}
	return key, true
}

func (a *Arena) isHead(c uint32) bool { return a.heads[c/64].Load()&(1<<(c%64)) != 0 }

// Get returns a copy of the value of the entry r names, if r still names
// one and its key is key; a miss otherwise, also when the entry is freed
// while Get copies it.
func (a *Arena) Get(r Ref, key []byte) ([]byte, bool) {
	head, gen := r.head(), r.gen()
	if head == 0 || head >= a.chunks || a.genOf(head).Load() != gen {
		return nil, false
	}
	c := cursor{a: a, chunk: head}
	lens, ok := c.load()
	klen, vlen := int(uint32(lens)), int(lens>>32)
	if !ok || klen != len(key) || klen+vlen > MaxEntry {
		return nil, false
	}
	if !c.equal(key) {
		return nil, false
	}
	val := make([]byte, vlen)
	if !c.loadBytes(val) || a.genOf(head).Load() != gen {
		return nil, false
	}
	return val, true
}

// Free returns the entry r names to the free list. It may be called more
// than once for an entry, or for a Ref whose entry is gone: only the first
// call for a live entry frees it.
func (a *Arena) Free(r Ref) {
	head, gen := r.head(), r.gen()
	if head == 0 || head >= a.chunks || !a.genOf(head).CompareAndSwap(gen, gen+1) {
		return
	}
	a.heads[head/64].And(^uint64(1 << (head % 64)))
	// The entry is ours now: no Put hands its chunks out until they are
	// on the free list, and readers see the new generation.
	c := cursor{a: a, chunk: head}
	lens, _ := c.load()
	n := chunksFor(int(uint32(lens)), int(lens>>32))
	tail := head
	for i := 1; i < n; i++ {
		tail = a.nextOf(tail).Load()
	}
	a.mu.Lock()
	a.nextOf(tail).Store(a.free)
	a.free = head
	a.nfree += uint32(n)
	a.mu.Unlock()
	a.used.Add(-int64(n))
}

// alloc takes n chunks, linked from the returned head: from the free list
// first, so that the pages in use stay few, then from the untouched end.
func (a *Arena) alloc(n int) (uint32, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if uint64(a.nfree)+uint64(a.chunks-a.bump) < uint64(n) {
		return 0, false
	}
	a.used.Add(int64(n))
	var head, prev uint32
	link := func(c uint32) {
		if prev == 0 {
			head = c
		} else {
			a.nextOf(prev).Store(c)
		}
		prev = c
	}
	for ; n > 0 && a.free != 0; n-- {
		c := a.free
		a.free = a.nextOf(c).Load()
		a.nfree--
		link(c)
	}
	for ; n > 0; n-- {
		link(a.bump)
		a.bump++
	}
	return head, true
}

func (a *Arena) chunk(i uint32) unsafe.Pointer {
	return unsafe.Add(a.base, uintptr(i)*ChunkSize)
}

// genOf and nextOf are a chunk's header words, typed atomics laid over the
// mapping.
func (a *Arena) genOf(i uint32) *atomic.Uint32 { return (*atomic.Uint32)(a.chunk(i)) }
func (a *Arena) nextOf(i uint32) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Add(a.chunk(i), 4))
}

// cursor walks the words of an entry, chunk by chunk. A reader's walk may
// meet chunks reused under it: every index it follows is checked, so it
// stays inside the arena, and its caller's second look at the generation
// throws what it read away.
type cursor struct {
	a     *Arena
	chunk uint32
	word  int // the next word's index in chunk
}

// advance moves to the next word, and to the next chunk after the last
// word of one; it is false when a reused chunk links out of the arena.
func (c *cursor) advance() bool {
	if c.word < chunkWords {
		return true
	}
	next := c.a.nextOf(c.chunk).Load()
	if next == 0 || next >= c.a.chunks {
		return false
	}
	c.chunk, c.word = next, 0
	return true
}

func (c *cursor) ptr() *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(c.a.chunk(c.chunk), headerSize+c.word*8))
}

func (c *cursor) load() (uint64, bool) {
	if !c.advance() {
		return 0, false
	}
	v := c.ptr().Load()
	c.word++
	return v, true
}

// store writes the next word; writers own their chunks, so advance cannot
// fail for them.
func (c *cursor) store(v uint64) {
	c.advance()
	c.ptr().Store(v)
	c.word++
}

// storeBytes writes b from the next word on, its last word padded with
// zeros, a chunk's run at a time (storeRun).
func (c *cursor) storeBytes(b []byte) {
	for len(b) > 0 {
		c.advance()
		n := min(len(b), (chunkWords-c.word)*8)
		storeRun(unsafe.Pointer(c.ptr()), b[:n])
		c.word += (n + 7) / 8
		b = b[n:]
	}
}

// storeRunWords is storeRun as atomic word stores, which order the words
// before the entry's publication on any architecture.
func storeRunWords(p unsafe.Pointer, b []byte) {
	for len(b) >= 8 {
		(*atomic.Uint64)(p).Store(binary.LittleEndian.Uint64(b))
		b, p = b[8:], unsafe.Add(p, 8)
	}
	if len(b) > 0 {
		(*atomic.Uint64)(p).Store(tailWord(b))
	}
}

// equal reports whether the next words hold b, as storeBytes wrote it.
func (c *cursor) equal(b []byte) bool {
	for len(b) >= 8 {
		if v, ok := c.load(); !ok || v != binary.LittleEndian.Uint64(b) {
			return false
		}
		b = b[8:]
	}
	if len(b) > 0 {
		if v, ok := c.load(); !ok || v != tailWord(b) {
			return false
		}
	}
	return true
}

// loadBytes fills b from the next words, a chunk's run of them at a time.
func (c *cursor) loadBytes(b []byte) bool {
	for len(b) > 0 {
		if !c.advance() {
			return false
		}
		n := min(len(b), (chunkWords-c.word)*8)
		loadRun(unsafe.Pointer(c.ptr()), b[:n])
		c.word += (n + 7) / 8
		b = b[n:]
	}
	return true
}

// loadRunWords is loadRun as atomic word loads, which order the copy
// before the reader's second look at the generation on any architecture.
func loadRunWords(p unsafe.Pointer, b []byte) {
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, (*atomic.Uint64)(p).Load())
		b, p = b[8:], unsafe.Add(p, 8)
	}
	if len(b) > 0 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], (*atomic.Uint64)(p).Load())
		copy(b, w[:])
	}
}

// tailWord is the last, partial word of a byte string: its bytes, then
// zeros.
func tailWord(b []byte) uint64 {
	var w [8]byte
	copy(w[:], b)
	return binary.LittleEndian.Uint64(w[:])
}

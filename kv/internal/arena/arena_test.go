package arena

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newArena(t *testing.T, size int64) *Arena {
	t.Helper()
	a, err := New(size)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	return a
}

func TestArena_RoundTripAcrossChunkBoundaries(t *testing.T) {
	a := newArena(t, 64<<20)
	sizes := []int{0, 1, 7, 8, 9, 111, 112, 113, 119, 120, 121, 239, 240, 1000, 4096, MaxEntry - 16}
	type put struct {
		key, val []byte
		ref      Ref
	}
	var puts []put
	for i, ks := range []int{1, 8, 13, 16} {
		for j, vs := range sizes {
			key := bytes.Repeat([]byte{byte('a' + i)}, ks)
			key[0] = byte(j) // distinct keys
			val := make([]byte, vs)
			for k := range val {
				val[k] = byte(k*7 + j)
			}
			r, cost, ok := a.Put(key, val)
			require.True(t, ok, "key %d value %d", ks, vs)
			assert.Equal(t, Cost(ks, vs), cost)
			puts = append(puts, put{key, val, r})
		}
	}
	for _, p := range puts {
		got, ok := a.Get(p.ref, p.key)
		require.True(t, ok, "key %d value %d", len(p.key), len(p.val))
		assert.Equal(t, p.val, got)
		assert.NotNil(t, got, "an empty value is a hit, not nil")
	}
	// A key that differs in its last byte, or in its length, is a miss.
	p := puts[len(puts)-1]
	other := bytes.Clone(p.key)
	other[len(other)-1]++
	_, ok := a.Get(p.ref, other)
	assert.False(t, ok)
	_, ok = a.Get(p.ref, p.key[:len(p.key)-1])
	assert.False(t, ok)
}

func TestArena_TooLargeAndFull(t *testing.T) {
	a := newArena(t, 16*ChunkSize)
	_, _, ok := a.Put([]byte("k"), make([]byte, MaxEntry))
	assert.False(t, ok, "past MaxEntry")
	assert.Equal(t, int64(-1), Cost(1, MaxEntry))

	// 15 usable chunks: five entries of three chunks each.
	val := make([]byte, 2*chunkWords*8) // with the header word: 3 chunks
	require.Equal(t, 3, chunksFor(1, len(val)))
	var refs []Ref
	for i := range 5 {
		r, _, ok := a.Put([]byte{byte(i)}, val)
		require.True(t, ok, "entry %d", i)
		refs = append(refs, r)
	}
	assert.Equal(t, a.Capacity(), a.InUse())
	_, _, ok = a.Put([]byte{9}, []byte("x"))
	assert.False(t, ok, "full")

	a.Free(refs[2])
	assert.Equal(t, a.Capacity()-3*ChunkSize, a.InUse())
	r, _, ok := a.Put([]byte{9}, val)
	require.True(t, ok, "the freed chunks are reused")
	got, ok := a.Get(r, []byte{9})
	require.True(t, ok)
	assert.Equal(t, val, got)
}

func TestArena_FreeIsOnceAndStaleRefsMiss(t *testing.T) {
	a := newArena(t, 4*ChunkSize)
	r1, _, ok := a.Put([]byte("k"), []byte("one"))
	require.True(t, ok)
	a.Free(r1)
	_, ok = a.Get(r1, []byte("k"))
	assert.False(t, ok, "a freed entry is a miss")
	assert.Zero(t, a.InUse())

	// The same chunk, reused: the old Ref names nothing, and freeing it
	// again must not free the new entry.
	r2, _, ok := a.Put([]byte("k"), []byte("two"))
	require.True(t, ok)
	require.Equal(t, r1.head(), r2.head(), "LIFO reuse")
	a.Free(r1)
	got, ok := a.Get(r2, []byte("k"))
	require.True(t, ok)
	assert.Equal(t, []byte("two"), got)
	_, ok = a.Get(r1, []byte("k"))
	assert.False(t, ok)
	assert.Equal(t, int64(ChunkSize), a.InUse())

	// Refs that name nothing are misses and no-ops.
	for _, r := range []Ref{0, Ref(uint64(1000) << 32), Ref(uint64(a.chunks) << 32)} {
		_, ok = a.Get(r, []byte("k"))
		assert.False(t, ok)
		a.Free(r)
	}
	assert.Equal(t, int64(ChunkSize), a.InUse())
}

func TestArena_NewRefusesSizes(t *testing.T) {
	for _, size := range []int64{-1, 0, ChunkSize, int64(maxChunks+1) * ChunkSize} {
		_, err := New(size)
		assert.ErrorIs(t, err, ErrSize, "size %d", size)
	}
}

// TestArena_ReadersBesideChurn has readers copy entries while writers free
// them and reuse their chunks for other entries. Every value encodes its
// key and version, so a copy torn between two entries, or of another key's
// value, fails the check; a reader may miss, never read wrong.
func TestArena_ReadersBesideChurn(t *testing.T) {
	const keys = 64
	a := newArena(t, 200*ChunkSize) // tight: chunks are reused all the time
	var slots [keys]atomic.Uint64   // each key's current Ref
	value := func(k int, version uint64, n int) []byte {
		v := make([]byte, n)
		for i := 0; i+8 <= n; i += 8 {
			binary.LittleEndian.PutUint64(v[i:], uint64(k)<<48|version<<8|uint64(i/8))
		}
		return v
	}
	key := func(k int) []byte { return fmt.Appendf(nil, "key-%03d", k) }

	var writers, readers sync.WaitGroup
	var stop atomic.Bool
	var hits, misses atomic.Int64
	for w := range 2 {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for version := uint64(1); !stop.Load(); version++ {
				k := rng.IntN(keys)
				r, _, ok := a.Put(key(k), value(k, version, 8*(1+rng.IntN(60))))
				if !ok {
					r = 0
				}
				if old := slots[k].Swap(uint64(r)); old != 0 {
					a.Free(Ref(old))
				}
			}
		})
	}
	var listed atomic.Int64
	writers.Go(func() { // Keys beside the churn: whole keys, never torn
		for !stop.Load() {
			a.Keys(func(k []byte) bool {
				var n int
				_, err := fmt.Sscanf(string(k), "key-%03d", &n)
				require.NoError(t, err, "a key no entry had: %q", k)
				require.Equal(t, string(key(n)), string(k), "a key no entry had")
				listed.Add(1)
				return true
			})
		}
	})
	// The readers start once the writers have put entries: on 2 CPUs the
	// lister's loop and fast readers could otherwise finish before a
	// writer ran.
	for a.InUse() == 0 {
		runtime.Gosched()
	}
	for range 4 {
		readers.Go(func() {
			for i := range 5000 {
				k := i % keys
				got, ok := a.Get(Ref(slots[k].Load()), key(k))
				if !ok {
					misses.Add(1)
					continue
				}
				hits.Add(1)
				require.Zero(t, len(got)%8)
				var version uint64
				for j := 0; j < len(got); j += 8 {
					w := binary.LittleEndian.Uint64(got[j:])
					require.Equal(t, uint64(k), w>>48, "another key's value")
					require.Equal(t, uint64(j/8), w&0xff, "words out of place")
					if j == 0 {
						version = w >> 8 & (1<<40 - 1)
					}
					require.Equal(t, version, w>>8&(1<<40-1), "a copy torn between versions")
				}
			}
		})
	}
	readers.Wait()
	stop.Store(true)
	writers.Wait()
	t.Logf("%d hits, %d misses", hits.Load(), misses.Load())
	assert.Positive(t, hits.Load(), "readers found entries")
	assert.Positive(t, listed.Load(), "Keys listed entries")
	// Every chunk is accounted for: those of the entries still named, and
	// the free list's.
	var held int64
	for k := range keys {
		if r := Ref(slots[k].Load()); r != 0 {
			got, ok := a.Get(r, key(k))
			require.True(t, ok, "a live entry reads")
			held += Cost(len(key(k)), len(got))
		}
	}
	assert.Equal(t, held, a.InUse())
}

func TestArena_KeysListsTheLiveEntries(t *testing.T) {
	a := newArena(t, 64*ChunkSize)
	refs := map[string]Ref{}
	for i, n := range []int{1, 100, 119, 120, 300} { // keys within a chunk and across several
		k := bytes.Repeat([]byte{byte('a' + i)}, n)
		r, _, ok := a.Put(k, []byte("v"))
		require.True(t, ok)
		refs[string(k)] = r
	}
	list := func() map[string]bool {
		got := map[string]bool{}
		a.Keys(func(k []byte) bool { got[string(k)] = true; return true })
		return got
	}
	want := map[string]bool{}
	for k := range refs {
		want[k] = true
	}
	assert.Equal(t, want, list())

	b := string(bytes.Repeat([]byte{'b'}, 100))
	a.Free(refs[b])
	delete(want, b)
	assert.Equal(t, want, list(), "a freed entry is not listed")
	r, _, ok := a.Put([]byte("new"), bytes.Repeat([]byte{'x'}, 500)) // reuses the freed chunks
	require.True(t, ok)
	want["new"] = true
	assert.Equal(t, want, list())
	_, ok = a.Get(refs[b], []byte(b))
	assert.False(t, ok, "the freed entry's Ref misses: Put moved the generation")
	_, ok = a.Get(r, []byte("new"))
	assert.True(t, ok)

	n := 0
	a.Keys(func([]byte) bool { n++; return n < 2 })
	assert.Equal(t, 2, n, "Keys stops when fn returns false")
}

// TestLoadRun_WordsAndPlainAgree: the atomic word copy other architectures
// use gives what the plain copy does, for every length within a chunk.
func TestLoadRun_WordsAndPlainAgree(t *testing.T) {
	src := make([]uint64, chunkWords) // word-aligned, as a chunk's data is
	for i := range src {
		src[i] = 0x0102030405060708 * uint64(i+1)
	}
	p := unsafe.Pointer(&src[0])
	for n := 0; n <= chunkWords*8; n++ {
		words, plain := make([]byte, n), make([]byte, n)
		loadRunWords(p, words)
		copy(plain, unsafe.Slice((*byte)(p), n))
		require.Equal(t, plain, words, "%d bytes", n)
	}
}

// BenchmarkArena_Get is a hit of a YCSB record (a 23-byte key, a value of
// ~1.1 KiB), the caller's copy included.
func BenchmarkArena_Get(b *testing.B) {
	a, err := New(1 << 20)
	require.NoError(b, err)
	defer a.Close()
	key, val := []byte("user6284781860667377211"), make([]byte, 1130)
	r, _, ok := a.Put(key, val)
	require.True(b, ok)
	b.SetBytes(int64(len(val)))
	for b.Loop() {
		if _, ok := a.Get(r, key); !ok {
			b.Fatal("miss")
		}
	}
}

// BenchmarkLoadRun compares the plain copy amd64 uses with the atomic word
// loads of other architectures, over a chunk's run of data.
func BenchmarkLoadRun(b *testing.B) {
	src := make([]uint64, chunkWords)
	dst := make([]byte, chunkWords*8)
	p := unsafe.Pointer(&src[0])
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			loadRun(p, dst)
		}
	})
	b.Run("words", func(b *testing.B) {
		for b.Loop() {
			loadRunWords(p, dst)
		}
	})
}

// TestStoreRun: the plain copy and the atomic word stores leave the same
// words, the last one padded with zeros over whatever the chunk held.
func TestStoreRun(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 63, 64, chunkWords * 8} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i + 1)
		}
		plain, words := make([]uint64, chunkWords), make([]uint64, chunkWords)
		for i := range plain {
			plain[i], words[i] = ^uint64(0), ^uint64(0) // a chunk's last life
		}
		storeRun(unsafe.Pointer(&plain[0]), src)
		storeRunWords(unsafe.Pointer(&words[0]), src)
		assert.Equal(t, words, plain, "%d bytes", n)
		if n%8 != 0 {
			assert.Equal(t, tailWord(src[n&^7:]), words[(n-1)/8], "%d bytes: the last word padded", n)
		} else {
			assert.Equal(t, binary.LittleEndian.Uint64(src[n-8:]), words[(n-1)/8], "%d bytes", n)
		}
		if w := (n + 7) / 8; w < chunkWords {
			assert.Equal(t, ^uint64(0), plain[w], "%d bytes: nothing past the run", n)
		}
	}
}

func BenchmarkArena_Put(b *testing.B) {
	a, err := New(1 << 20)
	require.NoError(b, err)
	defer a.Close()
	key, val := []byte("user6284781860667377211"), make([]byte, 1130)
	b.SetBytes(int64(len(val)))
	for b.Loop() {
		r, _, ok := a.Put(key, val)
		if !ok {
			b.Fatal("full")
		}
		a.Free(r)
	}
}

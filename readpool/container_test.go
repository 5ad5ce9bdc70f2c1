package readpool

import (
	"flag"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var containerSeed = flag.Uint64("container-seed", 0, "seed of TestEntryHeap_RandomPushPopRemove (0 = random)")

func TestEntryList_Remove(t *testing.T) {
	var l EntryList
	es := make([]*Entry, 5)
	for i := range es {
		es[i] = &Entry{TaskID: uint64(i)}
		l.Push(es[i])
		require.True(t, es[i].Queued())
	}
	l.Remove(es[0]) // head
	l.Remove(es[2]) // middle
	assert.True(t, es[4].Unlink())
	assert.False(t, es[4].Unlink(), "twice")
	assert.False(t, es[2].Queued())
	assert.Equal(t, 2, l.Len())
	assert.Same(t, es[1], l.Pop())
	assert.Same(t, es[3], l.Pop())
	assert.Nil(t, l.Pop())
	l.Push(es[0])
	assert.Equal(t, 1, l.Len(), "usable again after emptying")
	assert.Same(t, es[0], l.Pop())
}

// The heap against a sorted model, under random pushes, pops and removals
// from anywhere.
func TestEntryHeap_RandomPushPopRemove(t *testing.T) {
	seed := *containerSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("-container-seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var h EntryHeap
	var model []*Entry // sorted by (Key, push order)
	var pushed uint64
	for range 5000 {
		switch op := rng.IntN(10); {
		case op < 5:
			pushed++
			e := &Entry{Key: rng.Uint64N(50), TaskID: pushed}
			h.Push(e)
			i, _ := slices.BinarySearchFunc(model, e, func(a, b *Entry) int {
				if a.Key != b.Key {
					return int(int64(a.Key) - int64(b.Key))
				}
				return int(int64(a.TaskID) - int64(b.TaskID))
			})
			model = slices.Insert(model, i, e)
		case op < 8:
			e := h.Pop()
			if len(model) == 0 {
				require.Nil(t, e)
				continue
			}
			require.Same(t, model[0], e, "lowest key, ties in push order")
			model = model[1:]
			require.False(t, e.Queued())
		default:
			if len(model) == 0 {
				continue
			}
			i := rng.IntN(len(model))
			require.True(t, model[i].Unlink())
			model = slices.Delete(model, i, i+1)
		}
		require.Equal(t, len(model), h.Len())
	}
}

package kv

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func keysOf(ks ...string) [][]byte {
	out := make([][]byte, len(ks))
	for i, k := range ks {
		out[i] = []byte(k)
	}
	return out
}

func spanOf(start, end string) span {
	s := span{start: []byte(start)}
	if end != "" {
		s.end = []byte(end)
	}
	return s
}

func TestSpan(t *testing.T) {
	assert.True(t, spanOf("b", "d").contains([]byte("b")), "start is in")
	assert.True(t, spanOf("b", "d").contains([]byte("c")))
	assert.False(t, spanOf("b", "d").contains([]byte("d")), "end is out")
	assert.False(t, spanOf("b", "d").contains([]byte("a")))
	assert.True(t, spanOf("b", "").contains([]byte("zzz")), "a nil end is open")

	assert.True(t, spanOf("b", "d").overlaps(spanOf("c", "e")))
	assert.False(t, spanOf("b", "d").overlaps(spanOf("d", "e")), "touching ends share no key")
	assert.True(t, spanOf("b", "").overlaps(spanOf("x", "y")))
	assert.True(t, spanOf("", "").overlaps(spanOf("", "")), "the whole keyspace")
}

// TestReadSet_Touches: every way a write meets a read, and the ways it
// does not.
func TestReadSet_Touches(t *testing.T) {
	for _, c := range []struct {
		name        string
		readKeys    []string
		readRanges  []span
		wroteKeys   []string
		wroteRanges []span
		want        bool
	}{
		{name: "a key read, written", readKeys: []string{"a"}, wroteKeys: []string{"a"}, want: true},
		{name: "another key written", readKeys: []string{"a"}, wroteKeys: []string{"b"}},
		{name: "a key inserted into a scanned range (a phantom)", readRanges: []span{spanOf("b", "d")}, wroteKeys: []string{"c"}, want: true},
		{name: "a key written past the scanned extent", readRanges: []span{spanOf("b", "d")}, wroteKeys: []string{"d"}},
		{name: "a DeleteRange over a key read", readKeys: []string{"c"}, wroteRanges: []span{spanOf("b", "d")}, want: true},
		{name: "a DeleteRange beside a key read", readKeys: []string{"e"}, wroteRanges: []span{spanOf("b", "d")}},
		{name: "a DeleteRange over part of a scan", readRanges: []span{spanOf("c", "f")}, wroteRanges: []span{spanOf("a", "d")}, want: true},
		{name: "a DeleteRange beside a scan", readRanges: []span{spanOf("d", "f")}, wroteRanges: []span{spanOf("a", "d")}},
		{name: "nothing read", wroteKeys: []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r readSet
			for _, k := range c.readKeys {
				r.addKey([]byte(k))
			}
			for _, s := range c.readRanges {
				r.addRange(s)
			}
			w := writeSet{keys: keysOf(c.wroteKeys...), ranges: c.wroteRanges}
			assert.Equal(t, c.want, r.touches(&w))
		})
	}
}

package kv

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestConflictLog_WriteSkewAndLostUpdate(t *testing.T) {
	var l conflictLog
	// Two transactions read both balances, each writes one: write skew.
	t1, t2 := l.begin(), l.begin()
	var r1, r2 readSet
	for _, r := range []*readSet{&r1, &r2} {
		r.addKey([]byte("alice"))
		r.addKey([]byte("bob"))
	}
	require.False(t, l.conflicts(t1, &r1), "the first to commit wins")
	l.record(writeSet{keys: keysOf("alice")})
	l.end(t1)
	assert.True(t, l.conflicts(t2, &r2), "the second read what the first wrote")
	l.end(t2)
	assert.Empty(t, l.commits, "no transaction open: nothing kept")
}

func TestConflictLog_OnlyCommitsAfterTheStartCount(t *testing.T) {
	var l conflictLog
	old := l.begin()
	l.record(writeSet{keys: keysOf("k")}) // after old began
	young := l.begin()                    // sees that write
	var r readSet
	r.addKey([]byte("k"))
	assert.True(t, l.conflicts(old, &r))
	assert.False(t, l.conflicts(young, &r), "a write before the start is in its snapshot")
	l.record(writeSet{keys: keysOf("k")})
	assert.True(t, l.conflicts(young, &r))
}

func TestConflictLog_NothingRecordedWhileNoneOpen(t *testing.T) {
	var l conflictLog
	for range 100 {
		l.record(writeSet{keys: keysOf("k")})
	}
	assert.Empty(t, l.commits, "plain writes keep nothing while no transaction is open")
	assert.EqualValues(t, 100, l.seq, "but every commit has its sequence")
}

func TestConflictLog_PrunesToTheOldestOpen(t *testing.T) {
	var l conflictLog
	a := l.begin()
	l.record(writeSet{keys: keysOf("1")})
	b := l.begin()
	l.record(writeSet{keys: keysOf("2")})
	l.record(writeSet{keys: keysOf("3")})
	require.Len(t, l.commits, 3)
	l.end(a)
	assert.Len(t, l.commits, 2, "only those after b's start")
	var r readSet
	r.addKey([]byte("1"))
	assert.False(t, l.conflicts(b, &r), "the write of 1 came before b")
	r.addKey([]byte("3"))
	assert.True(t, l.conflicts(b, &r))
	l.end(b)
	assert.Empty(t, l.commits)
	assert.Empty(t, l.open)
}

func TestConflictLog_SameStartCountsTwice(t *testing.T) {
	var l conflictLog
	a, b := l.begin(), l.begin()
	require.Equal(t, a, b)
	l.record(writeSet{keys: keysOf("k")})
	l.end(a)
	assert.Len(t, l.commits, 1, "b, begun at the same sequence, is still open")
	l.end(b)
	assert.Empty(t, l.commits)
}

func TestConflictLog_ReadOnlyNeverConflicts(t *testing.T) {
	var l conflictLog
	s := l.begin()
	l.record(writeSet{ranges: []span{spanOf("", "")}})
	assert.False(t, l.conflicts(s, &readSet{}), "nothing read, nothing to conflict with")
}

// TestConflictLog_BoundedByLimit: a transaction left open while much is
// written costs at most the limit; once its records are cut it conflicts,
// while one begun after the cut is still checked exactly.
func TestConflictLog_BoundedByLimit(t *testing.T) {
	l := conflictLog{limit: 10 * (24 + 4)} // ten 4-byte keys
	old := l.begin()
	var r readSet
	r.addKey([]byte("zzzz")) // nobody writes it
	for i := range 30 {
		l.record(writeSet{keys: keysOf(fmt.Sprintf("k%03d", i))})
		assert.LessOrEqual(t, l.bytes, l.limit, "after write %d", i)
	}
	assert.LessOrEqual(t, len(l.commits), 10)
	assert.True(t, l.conflicts(old, &r), "records it needs were cut: it must retry")

	recent := l.begin()
	l.record(writeSet{keys: keysOf("k999")})
	assert.False(t, l.conflicts(recent, &r), "begun after the cut: checked exactly")
	r.addKey([]byte("k999"))
	assert.True(t, l.conflicts(recent, &r))

	l.end(old)
	l.end(recent)
	assert.Empty(t, l.commits)
	assert.Zero(t, l.bytes)
}

// TestConflictLog_InFlight: a plain write recorded but not yet applied is
// kept with no transaction open; one that begins meanwhile starts before
// it (its snapshot may miss it), so conflicts with it; once applied, and
// with nobody open, nothing is kept.
func TestConflictLog_InFlight(t *testing.T) {
	var l conflictLog
	w := l.recordInFlight(writeSet{keys: keysOf("k")})
	require.Len(t, l.commits, 1, "kept while in flight, though nobody is open")
	start := l.begin()
	assert.Less(t, start, w, "begun before the write in flight")
	var r readSet
	r.addKey([]byte("k"))
	assert.True(t, l.conflicts(start, &r))
	l.done(w)
	assert.True(t, l.conflicts(start, &r), "applied, still after the start")
	l.end(start)
	assert.Empty(t, l.commits)
	assert.Empty(t, l.inflight)

	a := l.recordInFlight(writeSet{keys: keysOf("a")})
	b := l.recordInFlight(writeSet{keys: keysOf("b")})
	l.done(b)
	assert.Len(t, l.commits, 2, "b is done but after a, still in flight")
	start = l.begin()
	assert.Equal(t, a-1, start)
	l.done(a)
	l.end(start)
	assert.Empty(t, l.commits)
	assert.Equal(t, b, l.begin(), "nothing in flight: the last sequence")
}

package kv

import (
	"bytes"
	"cmp"
	"slices"
)

// The conflict log of optimistic transactions (issue 30), as badger's
// oracle keeps one: every write that commits while a transaction is open
// is recorded with its commit sequence, and a transaction that began at
// sequence s conflicts at its commit if any write recorded after s touched
// a key it read or a key inside a range it scanned. Records of commits no
// open transaction began before are dropped, so memory is bounded by the
// open transactions; with none open, a write records nothing — its cost is
// the check that none is.
//
// A pure data structure: the caller holds the lock that orders commits
// (the same one that orders the WAL, so commit order and WAL order agree),
// and the tests drive it without goroutines.

// span is a half-open range of keys [start, end); a nil end is open.
type span struct {
	start, end []byte
}

// contains reports whether key is inside s.
func (s span) contains(key []byte) bool {
	return bytes.Compare(key, s.start) >= 0 && (s.end == nil || bytes.Compare(key, s.end) < 0)
}

// empty reports whether s holds no key (its end at or before its start).
func (s span) empty() bool { return s.end != nil && bytes.Compare(s.start, s.end) >= 0 }

// overlaps reports whether s and o share a key.
func (s span) overlaps(o span) bool {
	if s.empty() || o.empty() {
		return false
	}
	return (o.end == nil || bytes.Compare(s.start, o.end) < 0) && (s.end == nil || bytes.Compare(o.start, s.end) < 0)
}

// writeSet is what one commit wrote: keys, and ranges (DeleteRange).
type writeSet struct {
	keys   [][]byte
	ranges []span
}

// readSet is what a transaction read: keys, and the ranges it scanned
// (their extent actually read, when a scan stopped early).
type readSet struct {
	keys   map[string]struct{}
	ranges []span
}

// addKey records a read of key.
func (r *readSet) addKey(key []byte) {
	if r.keys == nil {
		r.keys = map[string]struct{}{}
	}
	r.keys[string(key)] = struct{}{}
}

// addRange records a scan of s.
func (r *readSet) addRange(s span) { r.ranges = append(r.ranges, s) }

// empty reports whether nothing was read.
func (r *readSet) empty() bool { return len(r.keys) == 0 && len(r.ranges) == 0 }

// touches reports whether w wrote anything r read.
func (r *readSet) touches(w *writeSet) bool {
	for _, k := range w.keys {
		if _, ok := r.keys[string(k)]; ok {
			return true
		}
		for _, s := range r.ranges {
			if s.contains(k) {
				return true
			}
		}
	}
	for _, ws := range w.ranges {
		for k := range r.keys {
			if ws.contains([]byte(k)) {
				return true
			}
		}
		for _, s := range r.ranges {
			if ws.overlaps(s) {
				return true
			}
		}
	}
	return false
}

// size is what w costs the log, in bytes: its keys and a word for each.
func (w *writeSet) size() int {
	n := 0
	for _, k := range w.keys {
		n += len(k) + 24
	}
	for _, r := range w.ranges {
		n += len(r.start) + len(r.end) + 48
	}
	return n
}

// commitRecord is one recorded commit.
type commitRecord struct {
	seq uint64
	w   writeSet
}

// conflictLog is the log itself. The zero value is ready, and keeps at
// most defaultConflictLogBytes of records.
type conflictLog struct {
	seq  uint64         // the last commit's sequence
	open map[uint64]int // open transactions by the sequence they began at
	// starts are the sequences in open, ascending, and some that no
	// longer are (dropped from the front as they are met): a start is
	// never below an earlier one (begin), so the oldest open transaction
	// is found in O(1).
	starts  []uint64
	commits []commitRecord // ascending seq, only while a transaction is open or the write is in flight
	// inflight are the sequences of writes recorded but not yet applied
	// (recordInFlight), ascending.
	inflight []uint64
	// bytes is what commits hold (writeSet.size); past limit the older
	// half is dropped and floor moves up to the last of them: a
	// transaction that began before floor can no longer be checked, so it
	// conflicts (if it read anything). A transaction left open while the
	// store takes heavy writes thus costs bounded memory, and a retry.
	bytes, limit int
	floor        uint64
}

// defaultConflictLogBytes bounds the log when its limit is 0: a
// transaction open across this much written data is told to retry.
const defaultConflictLogBytes = 64 << 20

// begin opens a transaction and returns the sequence it began at: it sees
// every commit up to it, and conflicts with those after. A write still in
// flight (recordInFlight) may be missing from the transaction's snapshot,
// so the start is set before the first of them: the transaction conflicts
// with it, and with those after, should they touch what it reads.
func (l *conflictLog) begin() uint64 {
	if l.open == nil {
		l.open = map[uint64]int{}
	}
	start := l.seq
	if len(l.inflight) > 0 {
		start = l.inflight[0] - 1
	}
	if l.open[start]++; l.open[start] == 1 {
		// Never below the last: l.seq only grows, and so does the first
		// write in flight (recorded ascending; only a done moves it, up).
		// Kept sorted all the same, should that ever change.
		if n := len(l.starts); n == 0 || l.starts[n-1] < start {
			l.starts = append(l.starts, start)
		} else if i, found := slices.BinarySearch(l.starts, start); !found {
			l.starts = slices.Insert(l.starts, i, start)
		}
	}
	return start
}

// oldestOpen is the start of the oldest open transaction, false for none.
func (l *conflictLog) oldestOpen() (uint64, bool) {
	for len(l.starts) > 0 {
		if s := l.starts[0]; l.open[s] > 0 {
			return s, true
		}
		l.starts = l.starts[1:]
	}
	return 0, false
}

// end closes a transaction that began at start (committed or rolled back)
// and drops the records no open transaction needs.
func (l *conflictLog) end(start uint64) {
	if l.open[start]--; l.open[start] <= 0 {
		delete(l.open, start)
	}
	l.prune()
}

// busy reports whether a transaction is open: only then is a write
// recorded.
func (l *conflictLog) busy() bool { return len(l.open) > 0 }

// record commits a write applied under the caller's lock and returns its
// sequence. It keeps w, which the caller must not change, only while a
// transaction is open.
func (l *conflictLog) record(w writeSet) uint64 {
	l.seq++
	if l.busy() {
		l.keep(w)
	}
	return l.seq
}

// recordInFlight commits a write that will be applied after the caller
// lets go of its lock, and returns its sequence: done(seq) must follow
// once it is applied. Meanwhile w is kept whether or not a transaction is
// open, for one may begin before it lands.
func (l *conflictLog) recordInFlight(w writeSet) uint64 {
	l.seq++
	l.keep(w)
	l.inflight = append(l.inflight, l.seq)
	return l.seq
}

// done marks the in-flight write seq applied.
func (l *conflictLog) done(seq uint64) {
	if i, ok := slices.BinarySearch(l.inflight, seq); ok {
		l.inflight = slices.Delete(l.inflight, i, i+1)
	}
	l.prune()
}

// keep appends a record of the write just sequenced, within the limit.
func (l *conflictLog) keep(w writeSet) {
	l.commits = append(l.commits, commitRecord{seq: l.seq, w: w})
	l.bytes += w.size()
	if limit := cmp.Or(l.limit, defaultConflictLogBytes); l.bytes > limit {
		l.cut(limit / 2)
	}
}

// cut drops the oldest records until at most keep bytes remain, and moves
// floor past them.
func (l *conflictLog) cut(keep int) {
	n := 0
	for n < len(l.commits) && l.bytes > keep {
		l.bytes -= l.commits[n].w.size()
		l.floor = l.commits[n].seq
		n++
	}
	clear(l.commits[:n])
	l.commits = slices.Delete(l.commits, 0, n)
}

// conflicts reports whether a commit after start wrote what r read.
func (l *conflictLog) conflicts(start uint64, r *readSet) bool {
	if r.empty() {
		return false
	}
	if start < l.floor {
		return true // its records are gone: it cannot be checked
	}
	i, _ := slices.BinarySearchFunc(l.commits, start+1, func(c commitRecord, s uint64) int {
		switch {
		case c.seq < s:
			return -1
		case c.seq > s:
			return 1
		}
		return 0
	})
	for _, c := range l.commits[i:] {
		if r.touches(&c.w) {
			return true
		}
	}
	return false
}

// prune drops the records of commits at or before the oldest open
// transaction's start, and before the first write in flight: no open
// transaction, nor one that begins now, can conflict with them.
func (l *conflictLog) prune() {
	oldest := l.seq
	if len(l.inflight) > 0 {
		oldest = l.inflight[0] - 1
	}
	if s, ok := l.oldestOpen(); ok {
		oldest = min(oldest, s)
	}
	if oldest == l.seq {
		clear(l.commits)
		l.commits, l.bytes = l.commits[:0], 0
		return
	}
	n := 0
	for n < len(l.commits) && l.commits[n].seq <= oldest {
		n++
	}
	if n > 0 {
		for _, c := range l.commits[:n] {
			l.bytes -= c.w.size()
		}
		clear(l.commits[:n])
		l.commits = slices.Delete(l.commits, 0, n)
	}
}

package resource

import (
	"cmp"
	"container/heap"
	"hash/maphash"
	"slices"
	"strings"
	"time"
)

// WatchKey is a read's identity for the watch list, built by the caller
// once per read: its task id (kv.WithTaskID) or, when it has none (0), its
// start key — the start of a Scan or of a coprocessor request's first
// range. With a task id the start key is ignored.
type WatchKey struct {
	TaskID   uint64
	StartKey string
	// None says the read has no identity to watch (TaskID and StartKey
	// are ignored): no watch catches it, and the rule adds none for it.
	// kv gives it to a point read without a task id, whose key is not a
	// start key: a MultiGet from the key a runaway scan started at is not
	// that scan coming again, nor is a Get of "" the scan from the start.
	None bool
}

// DefaultMaxWatches is the watch list's bound when NewRunaways is given 0.
const DefaultMaxWatches = 1024

// MaxWatchKeyLen is the most bytes of a start key the watch list keeps: a
// longer key is kept as its first MaxWatchKeyLen bytes and a 64-bit hash of
// the whole, so that a full list holds at most ~MaxWatchKeyLen ×
// DefaultMaxWatches (256 KiB) of keys, whatever the keys' size.
const MaxWatchKeyLen = 256

// watchID is a watch's key in the list: a group and a read's identity.
type watchID struct {
	group string
	task  uint64
	start string // the start key, or a long one's first MaxWatchKeyLen bytes
	long  bool   // start is cut; sum is the whole key's hash
	sum   uint64
}

// watch is one entry: reads of id are runaway with action until until.
type watch struct {
	id     watchID
	action RunawayAction
	until  time.Time
	i      int // index in the heap
}

// watchList is the pure watch list: a map from identity to watch and a
// min-heap by expiry, bounded at max entries. When full, the entry that
// expires soonest makes room for the new one (it had the least of its
// watch left to give). It is not safe for concurrent use and reads no
// clock: every call is given now. Expired entries go at the next add,
// lookup or live, from the heap's top, so the list never holds more than
// max entries and never answers for an expired one.
type watchList struct {
	max     int
	seed    maphash.Seed
	byID    map[watchID]*watch
	heap    watchHeap
	evicted int64 // live entries dropped for room
}

func newWatchList(max int) *watchList {
	if max <= 0 {
		panic("resource: a watch list needs room for one entry")
	}
	return &watchList{max: max, seed: maphash.MakeSeed(), byID: map[watchID]*watch{}}
}

// id is the list's key for group and k.
func (l *watchList) id(group string, k WatchKey) watchID {
	if k.TaskID != 0 {
		return watchID{group: group, task: k.TaskID}
	}
	if len(k.StartKey) <= MaxWatchKeyLen {
		return watchID{group: group, start: k.StartKey}
	}
	return watchID{group: group, start: k.StartKey[:MaxWatchKeyLen], long: true, sum: maphash.String(l.seed, k.StartKey)}
}

// add watches group's reads of k with action until until, replacing the
// identity's watch if it has one (the rule in force now decides).
func (l *watchList) add(group string, k WatchKey, action RunawayAction, now, until time.Time) {
	l.expire(now)
	if !now.Before(until) {
		return // nothing to watch
	}
	id := l.id(group, k)
	if w, ok := l.byID[id]; ok {
		w.action, w.until = action, until
		heap.Fix(&l.heap, w.i)
		return
	}
	if len(l.heap) >= l.max {
		l.remove(l.heap[0])
		l.evicted++
	}
	id.start = strings.Clone(id.start) // not the caller's backing array
	w := &watch{id: id, action: action, until: until}
	l.byID[id] = w
	heap.Push(&l.heap, w)
}

// lookup returns the action of a live watch on group's reads of k.
func (l *watchList) lookup(group string, k WatchKey, now time.Time) (RunawayAction, bool) {
	w, ok := l.byID[l.id(group, k)]
	if !ok {
		return "", false
	}
	if !now.Before(w.until) {
		l.expire(now) // w among them
		return "", false
	}
	return w.action, true
}

// expire drops the entries whose watch has ended by now.
func (l *watchList) expire(now time.Time) {
	for len(l.heap) > 0 && !now.Before(l.heap[0].until) {
		l.remove(l.heap[0])
	}
}

func (l *watchList) remove(w *watch) {
	heap.Remove(&l.heap, w.i)
	delete(l.byID, w.id)
}

// len is the entries held, expired ones not yet dropped included.
func (l *watchList) len() int { return len(l.heap) }

// live returns the live watches, soonest to expire first.
func (l *watchList) live(now time.Time) []RunawayWatch {
	l.expire(now)
	out := make([]RunawayWatch, 0, len(l.heap))
	for _, w := range l.heap {
		rw := RunawayWatch{Group: w.id.group, TaskID: w.id.task, StartKeyCut: w.id.long, Action: w.action, Expires: w.until}
		if w.id.task == 0 {
			rw.StartKey = []byte(w.id.start)
		}
		out = append(out, rw)
	}
	slices.SortFunc(out, func(a, b RunawayWatch) int {
		return cmp.Or(a.Expires.Compare(b.Expires), cmp.Compare(a.Group, b.Group),
			cmp.Compare(a.TaskID, b.TaskID), cmp.Compare(string(a.StartKey), string(b.StartKey)))
	})
	return out
}

// watchHeap orders watches by expiry, soonest on top.
type watchHeap []*watch

func (h watchHeap) Len() int           { return len(h) }
func (h watchHeap) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h watchHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *watchHeap) Push(x any) {
	w := x.(*watch)
	w.i = len(*h)
	*h = append(*h, w)
}
func (h *watchHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}

package kv

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// The warmer: one read-pool task at a time reads the spans left to warm
// (warmpolicy.go) through a Pebble iterator, which puts the blocks it reads
// into the block cache, at the pool's lowest priority and charged to no
// resource group (resource.Manager.Background). It stands down when
// warmPolicy says so and starts again at the next flush or compaction (or
// hot-set load) that gives it work. Close ends its task like any read's,
// after at most one step.

const (
	// warmSpanLimit bounds the spans kept: beyond it neighbours merge.
	warmSpanLimit = 1024
	// warmCheckEvery is how many keys the task reads between looks at the
	// policy and at ShouldYield.
	warmCheckEvery = 32
	// warmBatchBytes is the room asked of the cache for one batch: keys
	// of up to a few KiB, in blocks of 4 KiB.
	warmBatchBytes = 256 << 10
)

// warmer keeps the spans left to warm and runs the task that warms them.
//
// running is true from the moment a task is spawned until that task takes
// no more spans; it changes only under mu, with the spans, so a span added
// while the task is ending is either taken by it or starts a new one.
type warmer struct {
	policy   warmPolicy
	cache    *pebble.Cache
	reserved int64 // every memtable Pebble may keep (memTables × MemTableSize)
	reads    *diskReads

	// compacting counts the compactions running (Pebble's events), and
	// lastWrite is when a flush or compaction last ended (Unix ns; 0 for
	// none since Open).
	compacting atomic.Int64
	lastWrite  atomic.Int64
	// later kicks the warmer after a compaction (listen); Close stops it.
	later *time.Timer
	// saveTimer saves the hot set while the store is open
	// (DB.saveHotSetLater); nil when the store keeps none.
	saveTimer *time.Timer
	// restoring is set from a restore until the warmer first runs out of
	// spans; restoreStart is when it began.
	restoring    bool
	restoreStart time.Time

	mu    sync.Mutex
	spans warmSpans
	// rows are the saved row cache's keys left to read back into it
	// (hot set), after the spans.
	rows    [][]byte
	running bool
	// db is set once the store is open; until then spans are kept.
	db *DB

	stats warmCounters

	hooks warmHooks
}

// warmHooks let tests watch the warmer; they are set before the store
// opens and never after.
type warmHooks struct {
	// turnEnded is called each time the warmer stops: a task ends its turn
	// or a kick finds the policy against it, with the verdict then (warmGo:
	// no span was left).
	turnEnded func(warmVerdict)
	// beforeCheck is called in a task's step before each look at the
	// policy and the pool, and beforeRowCheck before each look at the
	// pool between the row cache's saved keys.
	beforeCheck    func()
	beforeRowCheck func()
}

// warmCounters are the warmer's figures (Stats.Warm).
type warmCounters struct {
	spansAdded, spansWarmed, spansSparse atomic.Int64
	keys, blockBytes                     atomic.Int64
	runs, rests                          atomic.Int64
	hotListed, hotQueued                 atomic.Int64
	hotRows, rowsRead, rowsCached        atomic.Int64
	restoreTook                          atomic.Int64 // time.Duration; 0 until done
	busy                                 atomic.Int64 // time.Duration in steps
	stoodDown                            [5]atomic.Int64
	lastVerdict                          atomic.Int64 // warmVerdict
}

// newWarmer takes a reference to cache, which its Close drops: the warmer
// looks at the cache's size until Pebble has closed.
func newWarmer(cache *pebble.Cache, reserved int64, reads *diskReads, hooks *warmHooks) *warmer {
	cache.Ref()
	var h warmHooks
	if hooks != nil {
		h = *hooks
	}
	w := &warmer{hooks: h,
		policy: newWarmPolicy(cache.MaxSize()), cache: cache, reserved: reserved, reads: reads,
		spans: warmSpans{limit: warmSpanLimit},
	}
	w.later = time.AfterFunc(time.Hour, w.kick)
	w.later.Stop()
	return w
}

// Close drops the warmer's reference to the block cache; the store closes
// it after Pebble.
func (w *warmer) Close() error {
	w.later.Stop()
	if w.saveTimer != nil {
		w.saveTimer.Stop()
	}
	w.cache.Unref()
	return nil
}

// listen adds the warmer's hooks to Pebble's events: the tables flushes and
// compactions write, and the compactions running. After each flush or
// compaction the warmer starts again once the policy's quiet has passed
// (warmQuiet).
func (w *warmer) listen(el *pebble.EventListener) {
	el.FlushEnd = func(info pebble.FlushInfo) {
		w.lastWrite.Store(time.Now().UnixNano())
		if info.Err == nil {
			w.queueTables(info.Output)
		}
		w.later.Reset(warmQuiet)
	}
	el.CompactionBegin = func(pebble.CompactionInfo) { w.compacting.Add(1) }
	el.TableDeleted = func(info pebble.TableDeleteInfo) { w.reads.forget(uint64(info.FileNum)) }
	// Pebble calls CompactionEnd holding its mutex, before it installs the
	// compaction's tables for new iterators: a warming iterator opened now
	// would read the tables the compaction replaced, whose blocks leave the
	// cache with them. The quiet's wait outlasts that.
	el.CompactionEnd = func(info pebble.CompactionInfo) {
		w.lastWrite.Store(time.Now().UnixNano())
		w.compacting.Add(-1)
		if info.Err == nil {
			w.queueTables(compactedTables(info))
		}
		w.later.Reset(warmQuiet)
	}
}

// compactedTables is the tables compaction info wrote: its outputs less those that
// were inputs too. A move compaction hands a table to the next level as it
// is, under its file number, so its blocks stay cached as they were.
func compactedTables(info pebble.CompactionInfo) []pebble.TableInfo {
	var out []pebble.TableInfo
	for _, t := range info.Output.Tables {
		moved := false
		for _, l := range info.Input {
			for _, in := range l.Tables {
				moved = moved || in.FileNum == t.FileNum
			}
		}
		if !moved {
			out = append(out, t)
		}
	}
	return out
}

// addTables queues the key spans of tables and starts warming them.
func (w *warmer) addTables(tables []pebble.TableInfo) {
	w.queueTables(tables)
	w.kick()
}

// queueTables queues the key spans of tables.
func (w *warmer) queueTables(tables []pebble.TableInfo) {
	w.mu.Lock()
	for i := range tables {
		t := &tables[i]
		w.spans.add(t.Smallest.UserKey, t.Largest.UserKey, int64(t.Size))
		w.stats.spansAdded.Add(1)
	}
	w.mu.Unlock()
}

// state is what the policy decides from, now.
func (w *warmer) state() warmState {
	since := time.Duration(math.MaxInt64)
	if t := w.lastWrite.Load(); t != 0 {
		since = time.Since(time.Unix(0, t))
	}
	return warmState{
		capacity: w.cache.MaxSize(), used: w.cache.Size(), reserved: w.reserved,
		diskSlow: w.reads.slow(), compacting: int(w.compacting.Load()), sinceWrite: since,
	}
}

// verdict asks the policy about the next batch, and counts a stand-down.
func (w *warmer) verdict() warmVerdict {
	v := w.policy.decide(w.state(), warmBatchBytes)
	w.stats.lastVerdict.Store(int64(v))
	if v != warmGo {
		w.stats.stoodDown[v].Add(1)
	}
	return v
}

// start hands the warmer the open store; spans queued during Open start
// warming now.
func (w *warmer) start(db *DB) {
	w.mu.Lock()
	w.db = db
	w.mu.Unlock()
	w.kick()
}

// kick spawns the warming task if there is work, none runs, and the
// policy allows.
func (w *warmer) kick() {
	w.mu.Lock()
	db := w.db
	if db == nil || w.running || w.spans.len() == 0 && len(w.rows) == 0 || db.closing.Load() {
		w.mu.Unlock()
		return
	}
	if v := w.verdict(); v != warmGo {
		w.mu.Unlock()
		w.ended(v)
		return
	}
	w.running = true
	w.mu.Unlock()

	t := &warmTask{w: w, db: db}
	err := db.pool.Go(context.Background(), t, readpool.SpawnOptions{
		Fixed: true, Level: readpool.LowestLevel,
		Tag: db.groups.Background(), Priority: uint64(resource.PriorityLow),
	})
	if err != nil { // closed, or the pool is full: a later event tries again
		w.mu.Lock()
		w.running = false
		w.mu.Unlock()
		return
	}
	w.stats.runs.Add(1)
}

// next gives the task its next span, or else up to warmCheckEvery of the
// row cache's keys, or ends its turn: when none is left or the policy says
// to stand down, running goes false under the same lock as the spans, and
// the task must return.
func (w *warmer) next() (warmSpan, [][]byte, bool) {
	w.mu.Lock()
	v := w.verdict()
	if v == warmGo {
		if s, ok := w.spans.take(); ok {
			w.mu.Unlock()
			return s, nil, true
		}
		if n := min(len(w.rows), warmCheckEvery); n > 0 {
			rows := w.rows[:n:n]
			w.rows = w.rows[n:]
			w.mu.Unlock()
			return warmSpan{}, rows, true
		}
	}
	if v == warmGo && w.restoring {
		w.restoring = false
		w.stats.restoreTook.Store(int64(max(time.Since(w.restoreStart), 1)))
	}
	w.running = false
	w.mu.Unlock()
	w.ended(v)
	return warmSpan{}, nil, false
}

// restore queues the tables of a saved hot set (listed of them in the
// file) and the row cache's keys (rows, nil without a row cache), and
// starts warming them.
func (w *warmer) restore(tables []pebble.TableInfo, listed int, rows [][]byte) {
	w.stats.hotListed.Store(int64(listed))
	w.stats.hotQueued.Store(int64(len(tables)))
	w.stats.hotRows.Store(int64(len(rows)))
	if len(tables) == 0 && len(rows) == 0 {
		return
	}
	w.mu.Lock()
	w.restoring, w.restoreStart = true, time.Now()
	w.rows = rows
	w.mu.Unlock()
	w.addTables(tables)
}

// putBack returns the unread rest of a span, from lo, and ends the task's
// turn, for the policy's verdict v.
func (w *warmer) putBack(s warmSpan, lo []byte, v warmVerdict) {
	w.mu.Lock()
	w.spans.add(lo, s.hi, s.bytes)
	w.running = false
	w.mu.Unlock()
	w.ended(v)
}

// endTurn ends the task's turn without a verdict.
func (w *warmer) endTurn() {
	w.mu.Lock()
	w.running = false
	w.mu.Unlock()
}

func (w *warmer) ended(v warmVerdict) {
	if w.hooks.turnEnded != nil {
		w.hooks.turnEnded(v)
	}
}

// WarmStats describes the warming of the caches (Options.NoWarm).
type WarmStats struct {
	Enabled bool `json:"enabled"`
	// Running says a warming task is in the pool now.
	Running bool `json:"running"`
	// SpansQueued counts the key spans queued: a table that a flush or
	// compaction wrote, or one the hot set named; PendingSpans and
	// PendingBytes are those left (overlapping spans merged), and the
	// bytes of the tables they came from.
	SpansQueued int64 `json:"spans_queued"`
	SpansWarmed int64 `json:"spans_warmed"`
	// SpansSparse counts the spans left cold because their tables were
	// less than a quarter of the bytes a scan of them would read: a flush
	// of keys spread over the whole key space.
	SpansSparse  int64 `json:"spans_sparse"`
	PendingSpans int   `json:"pending_spans"`
	PendingBytes int64 `json:"pending_bytes"`
	// Keys counts the keys warming read, and BlockBytes the bytes of the
	// blocks it read from the filesystem into the block cache.
	Keys       int64 `json:"keys"`
	BlockBytes int64 `json:"block_bytes"`
	// Runs counts the warming tasks, and Busy their time in steps. Rests
	// counts the pauses warming took beside reads (four times its step).
	Runs  int64         `json:"runs"`
	Busy  time.Duration `json:"busy_ns"`
	Rests int64         `json:"rests"`
	// HotSetTables is how many tables the hot set saved at the last Close
	// listed, and HotSetQueued how many of them, still in the store and
	// with room in the cache, were queued after Open; HotSetWarmedIn is how
	// long after Open warming first had nothing left, 0 until then.
	HotSetTables   int64         `json:"hot_set_tables"`
	HotSetQueued   int64         `json:"hot_set_queued"`
	HotSetWarmedIn time.Duration `json:"hot_set_warmed_in_ns"`
	// HotSetRows is how many of the row cache's keys the hot set listed;
	// RowsRead how many of them warming has read since, and RowsCached
	// how many it put back into the row cache.
	HotSetRows int64 `json:"hot_set_rows"`
	RowsRead   int64 `json:"rows_read"`
	RowsCached int64 `json:"rows_cached"`
	// StoodDown counts the times warming stood down, by reason: the block
	// cache had no room ("cache full"), the disk was slow, a compaction
	// was running, a flush or compaction had ended within the last second
	// ("writing"). Last is the latest decision.
	StoodDown map[string]int64 `json:"stood_down,omitempty"`
	Last      string           `json:"last"`
}

func (w *warmer) statsNow() WarmStats {
	c := &w.stats
	s := WarmStats{
		Enabled: true, SpansQueued: c.spansAdded.Load(), SpansWarmed: c.spansWarmed.Load(), SpansSparse: c.spansSparse.Load(),
		Keys: c.keys.Load(), BlockBytes: c.blockBytes.Load(), Runs: c.runs.Load(), Rests: c.rests.Load(), Busy: time.Duration(c.busy.Load()),
		Last:         warmVerdict(c.lastVerdict.Load()).String(),
		HotSetTables: c.hotListed.Load(), HotSetQueued: c.hotQueued.Load(), HotSetWarmedIn: time.Duration(c.restoreTook.Load()),
		HotSetRows: c.hotRows.Load(), RowsRead: c.rowsRead.Load(), RowsCached: c.rowsCached.Load(),
	}
	for v := warmCacheFull; v <= warmWriting; v++ {
		if n := c.stoodDown[v].Load(); n > 0 {
			if s.StoodDown == nil {
				s.StoodDown = map[string]int64{}
			}
			s.StoodDown[v.String()] = n
		}
	}
	w.mu.Lock()
	s.Running, s.PendingSpans, s.PendingBytes = w.running, w.spans.len(), w.spans.bytes()
	w.mu.Unlock()
	return s
}

package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/internal/valfmt"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// The sweeper deletes expired keys, so that their space comes back without
// a caller scanning. Its goroutine runs passes over the key space, each a
// series of batches. A batch's search is one step of a read-pool task at
// the lowest level, charged to the Background group as warming is: it
// reads on from where the last batch stopped, in a snapshot, until it has
// found sweepBatch expired keys or its slice is used. The goroutine then
// deletes those keys in a transaction of its own — begun after the search,
// reading each key again, so that a key a write reached in between is left
// alone, and committed through the oracle's check, so that one a write
// reaches before the commit is too.
//
// Pebble's block properties cannot help the search: Pebble v2 hands its
// collectors no values (the expiry is in the value), so a pass reads every
// value. A pass therefore runs only when one may find something: at Open
// for a store that has ever held a key with a TTL (its directory holds
// expiringMarker), once the earliest expiry has come that was written
// since the last pass or that the last pass saw still to come, and
// sweepIdle after a pass that saw a key with a TTL. Passes start at least
// sweepEvery apart, and after one that found few keys expired, at least
// sweepShare's inverse times its length apart (sweepGap); the deletes keep
// under sweepRate a second.
type sweeper struct {
	db   *DB
	kick chan struct{} // capacity 1: a pass may be due sooner
	trim chan struct{} // capacity 1: the write-ahead log has grown (trimWAL)
	stop chan struct{} // closed by close
	done chan struct{} // closed when the goroutine has ended
	// due is when the next pass should start, as Unix nanoseconds
	// (math.MaxInt64: none); writes with a TTL lower it to their expiry.
	due   atomic.Int64
	stats sweepCounters
	hooks *sweepHooks
	// flush is closed when the last flush trimWAL began is done (nil:
	// none yet). The sweeper's goroutine alone uses it.
	flush <-chan struct{}
	// logged counts the bytes written with a TTL since the last look at
	// the write-ahead log's budget.
	logged atomic.Int64
	// marked says expiringMarker exists; markMu orders its creation.
	marked atomic.Bool
	markMu sync.Mutex
}

// The sweeper's constants: a batch's most keys, the least time between
// passes, the time after a pass that saw keys with a TTL when the next one
// looks again, the share of one core passes may take, and the most keys
// deleted a second.
const (
	sweepBatch = 256
	sweepEvery = time.Second
	sweepIdle  = time.Minute
	sweepShare = 0.05
	sweepRate  = 50_000
)

// expiringMarker is the file whose presence in a store's directory says
// the store has held a key with a TTL: a pass is due at Open.
const expiringMarker = "COOPKV-EXPIRING"

// sweepHooks let tests watch the sweeper.
type sweepHooks struct {
	// passEnded is called at the end of each pass.
	passEnded func()
	// beforeDelete is called with a batch's keys before their deletion.
	beforeDelete func(keys [][]byte)
	// beforeLook is called by a batch's search before each look at the
	// pool, with the keys it has read.
	beforeLook func(read int)
	// flushed is called when trimWAL has begun a flush.
	flushed func()
}

// sweepCounters are the sweeper's figures (Stats.Sweep).
type sweepCounters struct {
	passes, expired, swept, beaten, flushes atomic.Int64
	lastPass                                atomic.Int64 // Unix nanoseconds of the last pass's end
}

// SweepStats describes the deletion of expired keys in the background.
type SweepStats struct {
	// Enabled is false on a store whose keys cannot expire (created before
	// TTLs), read-only, or with Options.NoSweep.
	Enabled bool `json:"enabled"`
	// Passes counts the sweeps over the key space.
	Passes int64 `json:"passes"`
	// Expired counts the keys the sweeps found expired; Swept, those they
	// deleted; Beaten, those a write reached first (not deleted: a later
	// pass looks again).
	Expired int64 `json:"expired"`
	Swept   int64 `json:"swept"`
	Beaten  int64 `json:"beaten"`
	// Flushes counts the memtable flushes the sweeper asked for
	// (Options.TrimWAL), so that the write-ahead log of values since
	// swept lets its space go.
	Flushes int64 `json:"flushes"`
	// LastPass is when the last sweep ended (zero: none yet).
	LastPass time.Time `json:"last_pass"`
}

func (s *sweeper) statsNow() SweepStats {
	st := SweepStats{Enabled: true, Passes: s.stats.passes.Load(), Expired: s.stats.expired.Load(),
		Swept: s.stats.swept.Load(), Beaten: s.stats.beaten.Load(), Flushes: s.stats.flushes.Load()}
	if t := s.stats.lastPass.Load(); t != 0 {
		st.LastPass = time.Unix(0, t)
	}
	return st
}

// newSweeper starts the sweeper of db, with a pass due now if the store
// has held keys with a TTL.
func newSweeper(db *DB, hooks *sweepHooks) *sweeper {
	s := &sweeper{db: db, kick: make(chan struct{}, 1), trim: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), hooks: hooks}
	if s.hooks == nil {
		s.hooks = &sweepHooks{}
	}
	s.due.Store(math.MaxInt64)
	if !db.opts.InMemory {
		if _, err := db.popts.FS.Stat(db.popts.FS.PathJoin(db.dir, expiringMarker)); err == nil {
			s.due.Store(db.now())
			s.marked.Store(true)
		}
	}
	go s.run()
	return s
}

// mark records, once, that the store holds keys with a TTL, before the
// first such write: a pass is then due at every Open.
func (s *sweeper) mark() error {
	if s.marked.Load() || s.db.opts.InMemory {
		return nil
	}
	s.markMu.Lock()
	defer s.markMu.Unlock()
	if s.marked.Load() {
		return nil
	}
	if err := writeMarker(s.db.popts.FS, s.db.dir); err != nil {
		return err
	}
	s.marked.Store(true)
	return nil
}

// writeMarker creates expiringMarker in dir, durably.
func writeMarker(fs vfs.FS, dir string) error {
	f, err := fs.Create(fs.PathJoin(dir, expiringMarker), vfs.WriteCategoryUnspecified)
	if err == nil {
		err = errors.Join(f.Sync(), f.Close())
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		return fmt.Errorf("record that keys expire: %w", err)
	}
	return nil
}

// syncDir makes a file created in dir durable.
func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// wrote tells the sweeper a write of logged bytes has a key that expires
// at exp.
func (s *sweeper) wrote(exp int64, logged int) {
	if exp < s.due.Load() {
		valfmt.Note(&s.due, exp)
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	if s.db.opts.TrimWAL && s.logged.Add(int64(logged)) >= trimEvery {
		s.logged.Store(0)
		select {
		case s.trim <- struct{}{}:
		default:
		}
	}
}

// close stops the sweeper and waits for its goroutine: a batch being
// deleted finishes first, one being found ends with the pool.
func (s *sweeper) close() {
	close(s.stop)
	<-s.done
}

// run is the sweeper's goroutine.
func (s *sweeper) run() {
	defer close(s.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var lastEnd int64
	var gap time.Duration // since the last pass's end, at least
	for {
		wait := time.Duration(max(s.due.Load(), lastEnd+int64(gap)) - s.db.now())
		if s.due.Load() == math.MaxInt64 {
			wait = time.Duration(math.MaxInt64)
		}
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-s.stop:
				return
			case <-s.kick:
				timer.Stop() // since Go 1.23 no stale tick is left to drain
				continue
			case <-s.trim:
				timer.Stop()
				s.trimWAL()
				continue
			case <-timer.C:
				continue // look again: the due time may have moved
			}
		}
		s.due.Store(math.MaxInt64) // writes from now on lower it again
		began := time.Now()
		next, more, read, found := s.pass()
		valfmt.Note(&s.due, next) // the earliest expiry the pass saw to come
		gap = sweepGap(time.Since(began), read, found)
		lastEnd = s.db.now()
		s.stats.passes.Add(1)
		s.stats.lastPass.Store(lastEnd)
		if more {
			valfmt.Note(&s.due, lastEnd+int64(sweepIdle))
		}
		if h := s.hooks.passEnded; h != nil {
			h()
		}
	}
}

// sweepGap is the least time from the end of a pass that took took,
// reading read keys of which found had expired, to the start of the next:
// sweepEvery; and for a pass that found few of what it read (under a
// tenth), 1/sweepShare times its length, so that sweeping a large store of
// keys that mostly have no TTL keeps to a small share of one core, while
// a store of mostly expiring keys is swept as fast as they expire.
func sweepGap(took time.Duration, read, found int) time.Duration {
	if found*10 >= read {
		return sweepEvery
	}
	return max(sweepEvery, time.Duration(float64(took)/sweepShare))
}

// pass sweeps the key space once, a batch at a time. It returns the
// earliest expiry yet to come that it saw (0: none), whether keys with a
// TTL may remain (it saw one, or stopped early), and how many keys it
// read and found expired.
func (s *sweeper) pass() (next int64, more bool, read, found int) {
	var from []byte
	for {
		select {
		case <-s.stop:
			return next, true, read, found
		default:
		}
		b, err := s.find(from)
		if err != nil {
			return next, true, read, found // closed or failed: Close is coming, or a read will say
		}
		read, found = read+b.read, found+len(b.keys)
		more = more || b.sawTTL
		if b.next != 0 && (next == 0 || b.next < next) {
			next = b.next
		}
		if len(b.keys) > 0 {
			if s.delete(b.keys) > 0 {
				s.trimWAL()
			}
			// At most sweepRate keys a second.
			pause := time.Duration(len(b.keys)) * time.Second / sweepRate
			select {
			case <-s.stop:
				return next, true, read, found
			case <-time.After(pause):
			}
		}
		if b.from == nil {
			return next, more, read, found
		}
		from = b.from
	}
}

// trimWAL flushes the memtable, with Options.TrimWAL, when the write-ahead
// log outgrows its budget (walbudget.go).
func (s *sweeper) trimWAL() {
	if !s.db.opts.TrimWAL {
		return
	}
	if f := s.db.trimWAL(s.flush); f != nil && f != s.flush {
		s.flush = f
		s.stats.flushes.Add(1)
		if h := s.hooks.flushed; h != nil {
			h()
		}
	}
}

// sweepFound is what a batch's search found: keys expired in its
// snapshot, the earliest expiry yet to come among the values it read (0:
// none), and where the next batch starts (nil: the pass is over).
type sweepFound struct {
	keys   [][]byte
	next   int64
	from   []byte
	sawTTL bool // a value with a TTL was read, expired or not
	read   int  // keys read
}

// find runs one batch's search from key from (nil: the first key) as a
// read-pool task, or on this goroutine without a pool.
func (s *sweeper) find(from []byte) (*sweepFound, error) {
	db := s.db
	snap, err := db.snapshot()
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	t := &sweepTask{snap: snap, from: from, found: &sweepFound{}, hooks: s.hooks, done: make(chan struct{})}
	if db.pool == nil {
		t.Step(nil)
		t.Done(nil)
	} else if err := db.pool.Go(context.Background(), t, readpool.SpawnOptions{
		Fixed: true, Level: readpool.LowestLevel,
		Tag: db.groups.Background(), Priority: uint64(resource.PriorityLow),
	}); err != nil {
		t.Done(err)
	}
	<-t.done
	return t.found, t.err
}

// delete deletes keys, found expired, in a transaction begun now that reads
// each again and deletes it if it is still expired, unless a write reaches
// it before the commit. It returns how many it deleted.
func (s *sweeper) delete(keys [][]byte) int {
	if h := s.hooks.beforeDelete; h != nil {
		h(keys)
	}
	db := s.db
	if err := db.enter(); err != nil {
		return 0
	}
	start := db.oracle.begin()
	snap := db.trackSnapshot(db.pdb.NewSnapshot()) // after the start: see oracle.begin
	db.mu.RUnlock()
	defer snap.Close()
	var reads readSet
	var ops []BatchOp
	for _, k := range keys {
		val, exp, err := snap.readStored(k)
		if err != nil || !valfmt.Expired(exp, snap.time) {
			s.stats.beaten.Add(1) // written since the search (or unreadable: a read will say)
			continue
		}
		reads.addKey(k)
		// A sized tombstone: Pebble's compactions then count the space
		// it frees, and reclaim it sooner.
		ops = append(ops, BatchOp{Kind: OpDelete, Key: k, deletedSize: uint32(min(valfmt.Size(len(val), exp), math.MaxUint32))})
	}
	s.stats.expired.Add(int64(len(ops)))
	check := txnCheck{start: start, reads: &reads}
	var err error
	if len(ops) > 0 {
		if err = db.enterWrite(); err == nil {
			err = db.applyOps(ops, &check)
			db.exitWrite(false)
		}
	}
	if !check.ended {
		db.oracle.end(start)
	}
	switch {
	case len(ops) == 0:
	case err == nil:
		s.stats.swept.Add(int64(len(ops)))
		return len(ops)
	case errors.Is(err, ErrConflict):
		s.stats.beaten.Add(int64(len(ops)))
		valfmt.Note(&s.due, db.now()+int64(sweepEvery)) // look again soon
	}
	return 0
}

// sweepTask is one batch's search, as a read-pool task.
type sweepTask struct {
	hooks *sweepHooks
	snap  *dbSnapshot
	from  []byte
	found *sweepFound
	err   error
	done  chan struct{}
}

// Step reads from t.from until it has found sweepBatch expired keys, the
// slice is used (sc nil: never), or the key space ends.
func (t *sweepTask) Step(sc *readpool.StepContext) readpool.Status {
	now := t.snap.time
	it, err := t.snap.NewIter(&pebble.IterOptions{LowerBound: t.from})
	if err != nil {
		t.err = err
		return readpool.Ready
	}
	f := t.found
	n := 0
	valid := it.First()
	for ; valid && len(f.keys) < sweepBatch; valid = it.Next() {
		// A look at the pool every 64 keys, the first before any: a step
		// yields at a look past its first.
		if n%64 == 0 && sc != nil {
			if h := t.hooks.beforeLook; h != nil {
				h(n)
			}
			if sc.ShouldYield() {
				break
			}
		}
		n++
		f.read++
		v, err := it.ValueAndErr()
		if err != nil {
			t.err = err
			break
		}
		_, exp, err := valfmt.Decode(v)
		if err != nil || exp == 0 {
			continue // corrupt (a read reports it), or no TTL
		}
		f.sawTTL = true
		switch {
		case valfmt.Expired(exp, now):
			f.keys = append(f.keys, bytes.Clone(it.Key()))
		case f.next == 0 || exp < f.next:
			f.next = exp
		}
	}
	if valid && t.err == nil {
		f.from = bytes.Clone(it.Key()) // unread: the next batch starts here
	}
	if err := it.Close(); err != nil && t.err == nil {
		t.err = err
	}
	return readpool.Ready
}

func (t *sweepTask) Done(err error) {
	if err != nil && t.err == nil {
		t.err = err
	}
	close(t.done)
}

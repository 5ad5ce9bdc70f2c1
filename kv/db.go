package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
	"github.com/coopkv/coopkv/scan"
)

// DB is an open store. Its methods are safe for concurrent use.
type DB struct {
	opts  Options
	dir   string
	popts *pebble.Options // Pebble's, defaults filled in
	pdb   *pebble.DB
	pool  *readpool.Pool // nil with SchedulerDirect
	// groups are the store's resource groups; sched schedules by them
	// when resource control is on (nil otherwise).
	groups *resource.Manager
	sched  *resource.Scheduler
	cache  *rowCache // nil when RowCacheSize < 0
	wopts  *pebble.WriteOptions

	// mu guards Pebble against Close: every call that reaches Pebble from
	// the caller's goroutine holds it shared, and so does a Scan until its
	// Pebble iterator belongs to the pool or to direct; Close takes it
	// exclusively before it closes Pebble — which panics on any call after
	// its Close. Reads in the pool need no lock: Close ends the pool first.
	mu sync.RWMutex
	// closing is set by the first Close, before it takes mu: calls check
	// it before they wait for mu too, since while Close waits for a long
	// call (a Check) to let go of mu an RLock would wait as well — Go's
	// RWMutex admits no new reader once a writer waits — where ErrClosed
	// is the answer; and again under mu.
	closing atomic.Bool
	// closeDone is closed when the first Close has finished: a Close that
	// finds the store closing waits for it, so that every Close returns
	// with the store closed (its directory free to open again).
	closeDone chan struct{}

	closers []io.Closer // closed after Pebble

	// disk is what the store's filesystem has seen of the disk: a failure
	// or a full disk refuses writes (see disk.go).
	disk *diskHealth
	// reads watches the table reads, and tells the pool of slow ones
	// (diskreads.go).
	reads *diskReads

	// snapshots are the open snapshots, which Close closes; nil once Close
	// has taken them.
	snapMu    sync.Mutex
	snapshots map[*Snapshot]struct{}

	// writeMu orders writes against a range deletion with an open end:
	// writes hold it shared, and such a deletion holds it exclusively
	// while it finds the last key and deletes up to it, so that no key
	// written before it commits escapes it (see rangeEnd).
	writeMu sync.RWMutex
	// oracle orders writes against transactions (oracle.go).
	oracle oracle

	// direct holds the open scans of SchedulerDirect, which Close ends; nil
	// once Close has taken them.
	directMu sync.Mutex
	direct   map[*scan.Direct]struct{}

	hooks testHooks
}

// testHooks let tests stop a read at a known point. They are set before the
// store's first read and never after, so reading them needs no
// synchronisation; a nil hook costs one predictable branch.
type testHooks struct {
	// beforeRead is called by every Get, on the goroutine that runs its
	// step, before it looks in the row cache and Pebble.
	beforeRead func(key []byte)
	// beforeHit is called by a Get served from the row cache without a
	// worker (Pool.Bypass), on its caller's goroutine, before the lookup.
	beforeHit func(key []byte)
	// afterWrite is called by every write of key once Pebble has it,
	// before the row cache hears of it.
	afterWrite func(key []byte)
}

// Open opens the store in dir, creating it if it does not exist. opts may be
// nil. With opts.InMemory the store lives in memory and dir is a name only.
func Open(dir string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.ensureDefaults()

	disk := newDiskHealth(o.Logger)
	events := eventListener(o.Logger)
	po := &pebble.Options{Logger: pebbleLogger{o.Logger, disk}, EventListener: events, ReadOnly: o.ReadOnly}
	var closers []io.Closer
	if o.FS != nil {
		po.FS = o.FS
		if dir == "" {
			dir = "coopkv"
		}
	} else if o.InMemory {
		po.FS = vfs.NewMem()
		if dir == "" {
			dir = "coopkv"
		}
	} else {
		if dir == "" {
			return nil, errors.New("kv: open: empty directory name")
		}
		if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
			return nil, fmt.Errorf("kv: open %s: not a directory", dir)
		}
		// Pebble adds disk-health checks to the default filesystem itself,
		// but a failed Open then leaks the checker's goroutine: wrap it here
		// and close it on every path.
		var fsCloser io.Closer
		po.FS, fsCloser = vfs.WithDiskHealthChecks(vfs.Default, 5*time.Second, nil, events.DiskSlow)
		closers = append(closers, fsCloser)
	}
	reads := newDiskReads()
	po.FS = &diskFS{FS: po.FS, h: disk, dir: filepath.Clean(dir), os: o.FS == nil && !o.InMemory, reads: reads}
	tunePebble(po, o.CacheSize)
	// Open checks the tables itself (checkTableFiles): Pebble's check
	// fails with an error that says neither ErrCorrupt nor anything a
	// caller can test.
	po.DisableConsistencyCheck = true
	// Pebble's default block cache is 8 MB; ours is CacheSize. Open takes
	// its own reference, so ours is dropped once it has.
	cache := pebble.NewCache(o.CacheSize)
	defer cache.Unref()
	po.Cache = cache

	// A new store is written at the newest format Pebble knows (left to
	// itself Pebble picks its oldest). An existing one keeps its format:
	// raising it is a one-way step (an older Pebble could no longer open
	// the store) that is not Open's to take.
	desc, err := pebble.Peek(dir, po.FS)
	missing := errors.Is(err, os.ErrNotExist) || err == nil && !desc.Exists
	if missing {
		po.FormatMajorVersion = pebble.FormatNewest
	}
	if err != nil && !missing {
		// Not knowing the store's format, Open must not guess it: a
		// failure to read the directory is Open's failure.
		err = fmt.Errorf("kv: open %s: %w", dir, err)
	} else if o.ReadOnly && missing {
		// Pebble would create an empty store in memory and then fail to
		// find its manifest; say what is wrong instead.
		err = fmt.Errorf("kv: open %s read-only: no store there", dir)
	} else {
		var pdb *pebble.DB
		if pdb, err = pebble.Open(dir, po); err == nil {
			return finishOpen(dir, o, po, pdb, disk, reads, closers)
		}
		if isNotExist(err) {
			// The store is there (Peek found it): a file it lists is not.
			err = &corruptError{err}
		}
		err = fmt.Errorf("kv: open %s: %w", dir, corruptOr(lockErr(err)))
	}
	for _, c := range closers {
		_ = c.Close()
	}
	return nil, err
}

// lockErr turns a failure to lock the directory — fcntl's EAGAIN or EACCES
// from another process, errLockedHere for a second opener in this one
// (diskFS.Lock) — into ErrLocked, keeping the cause's words.
func lockErr(err error) error {
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || errors.Is(err, errLockedHere) {
		return fmt.Errorf("%w (%v)", ErrLocked, err)
	}
	return err
}

// buildRowCache builds the row cache; a test makes it fail.
var buildRowCache = newRowCache

// finishOpen builds the store around an open Pebble.
func finishOpen(dir string, o Options, po *pebble.Options, pdb *pebble.DB, disk *diskHealth, reads *diskReads, closers []io.Closer) (*DB, error) {
	var err error
	// Check reads table files with the options Pebble runs with.
	po = po.Clone()
	po.EnsureDefaults()
	db := &DB{opts: o, dir: dir, popts: po, pdb: pdb, wopts: pebble.Sync, direct: map[*scan.Direct]struct{}{}, snapshots: map[*Snapshot]struct{}{}, closers: closers, disk: disk, reads: reads, groups: resource.NewManager(), closeDone: make(chan struct{})}
	if err := db.checkTableFiles(); err != nil {
		db.closeStorage()
		return nil, fmt.Errorf("kv: open %s: %w", dir, err)
	}
	if o.NoSync {
		db.wopts = pebble.NoSync
	}
	if o.RowCacheSize > 0 {
		if db.cache, err = buildRowCache(o.RowCacheSize); err != nil {
			db.closeStorage() // Pebble and the closers: the disk-health checker too
			return nil, fmt.Errorf("kv: open %s: row cache: %w", dir, err)
		}
	}
	if o.Scheduler != SchedulerDirect {
		po := readpool.Options{Workers: o.Workers, MaxWorkers: o.MaxWorkers, MaxTasks: o.MaxTasks, TimeSlice: o.TimeSlice, Spares: o.spares}
		switch o.Scheduler {
		case SchedulerFIFO:
			po.Queue = readpool.NewFIFO()
		case SchedulerWorkStealing:
			po.Queue = readpool.NewWorkStealing()
		case SchedulerPriority:
			db.sched = resource.NewScheduler(db.groups)
			po.Queue, po.Accountant = db.sched, db.sched
		default:
			po.Queue = readpool.NewMLFQ(readpool.MLFQOptions{})
		}
		db.pool, err = readpool.New(po)
		if err != nil {
			db.closeStorage()
			return nil, fmt.Errorf("kv: open %s: %w", dir, err)
		}
		reads.pool.Store(db.pool) // slow table reads tell it from now on
	}
	return db, nil
}

// Options returns the options in force, defaults filled in.
func (db *DB) Options() Options { return db.opts }

// ResourceGroups returns the store's resource groups. They schedule reads
// only under resource control (Options.ResourceControl); changes apply at
// once, to reads queued after them.
func (db *DB) ResourceGroups() *resource.Manager { return db.groups }

// groupsIfControlled is the manager reads resolve their group in, or nil
// without resource control.
func (db *DB) groupsIfControlled() *resource.Manager {
	if db.sched == nil {
		return nil
	}
	return db.groups
}

// Close ends the store: new calls fail with ErrClosed, running scans end
// (their Err says ErrClosed), running reads are waited for, and Pebble is
// closed. No goroutine or Pebble iterator of the store outlives it. Close is
// idempotent: a Close that meets another one waits for it to finish, and
// later ones return nil at once.
func (db *DB) Close() error {
	if db.closing.Swap(true) { // new calls fail from here
		<-db.closeDone
		return nil
	}
	defer close(db.closeDone)
	// Wait for the calls that entered before: a Scan hands its iterator to
	// the pool under mu, before the pool closes.
	db.mu.Lock()
	//lint:ignore SA2001 the empty critical section is the wait
	db.mu.Unlock()

	var errs []error
	if db.pool != nil {
		// Ends every read task, and with it every pooled scan's iterator.
		errs = append(errs, db.pool.Close())
	}
	// Scans register under mu, shared, so none can register after this.
	// Ending one calls back into untrack: the map is taken first, so that
	// its lock is not held meanwhile.
	db.directMu.Lock()
	direct := db.direct
	db.direct = nil
	db.directMu.Unlock()
	for d := range direct {
		d.End(ErrClosed)
	}
	// No read uses a snapshot now (the pool and the direct scans have
	// ended, and direct reads hold mu): Pebble's are closed before Pebble.
	errs = append(errs, db.closeSnapshots())

	// Wait for calls that were already in Pebble when closed was set.
	db.mu.Lock()
	defer db.mu.Unlock()
	errs = append(errs, db.closeStorage())
	return errors.Join(errs...)
}

// closeStorage closes Pebble; it returns the store's failure, if it
// failed, as the reason its last writes may be missing.
func (db *DB) closeStorage() error {
	if db.cache != nil {
		db.cache.close()
	}
	db.disk.close() // a write waiting for space gives up
	err := db.pdb.Close()
	for _, c := range db.closers {
		_ = c.Close()
	}
	if ferr := db.disk.failedErr(); ferr != nil {
		return fmt.Errorf("kv: close: %w", ferr)
	}
	if err != nil {
		return fmt.Errorf("kv: close: %w", err)
	}
	return nil
}

// enter guards a call into Pebble from the caller's goroutine; leave with
// db.mu.RUnlock.
func (db *DB) enter() error {
	if db.closing.Load() {
		return ErrClosed
	}
	db.mu.RLock()
	if db.closing.Load() {
		db.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// enterWrite is enter for the writes: a read-only store refuses them
// before Pebble does, with the store's own error.
func (db *DB) enterWrite() error { return db.enterWriteAs(false) }

// enterWriteAs is enterWrite holding writeMu exclusively (alone) or shared;
// exitWrite releases what it took.
func (db *DB) enterWriteAs(alone bool) error {
	if err := db.enter(); err != nil {
		return err
	}
	if db.opts.ReadOnly {
		db.mu.RUnlock()
		return ErrReadOnly
	}
	if err := db.disk.err(); err != nil {
		db.mu.RUnlock()
		return err
	}
	if alone {
		db.writeMu.Lock()
	} else {
		db.writeMu.RLock()
	}
	return nil
}

func (db *DB) exitWrite(alone bool) {
	if alone {
		db.writeMu.Unlock()
	} else {
		db.writeMu.RUnlock()
	}
	db.mu.RUnlock()
}

// closedOr returns ErrClosed after Close, else err: a call's own failure
// must not hide that the store is closed. Only failure paths call it.
func (db *DB) closedOr(err error) error {
	if db.closing.Load() {
		return ErrClosed
	}
	return err
}

// Set stores value under key, on the caller's goroutine; synced unless
// NoSync. The store keeps its own copy of both.
func (db *DB) Set(key, value []byte) error {
	if len(key) == 0 {
		return db.closedOr(ErrEmptyKey)
	}
	if err := db.enterWrite(); err != nil {
		return err
	}
	defer db.exitWrite(false)
	gen := db.beforeWrite(key)
	var err error
	if db.oracle.recording.Load() {
		err = db.applyOne(key, value, false)
	} else {
		err = db.pdb.Set(key, value, db.wopts)
	}
	if err := db.committed(err); err != nil {
		db.writeFailed(key, gen)
		return fmt.Errorf("kv: set %q: %w", key, err)
	}
	db.written(key, value, false, gen)
	return nil
}

// Delete removes key; deleting a missing key is not an error.
func (db *DB) Delete(key []byte) error {
	if len(key) == 0 {
		return db.closedOr(ErrEmptyKey)
	}
	if err := db.enterWrite(); err != nil {
		return err
	}
	defer db.exitWrite(false)
	gen := db.beforeWrite(key)
	var err error
	if db.oracle.recording.Load() {
		err = db.applyOne(key, nil, true)
	} else {
		err = db.pdb.Delete(key, db.wopts)
	}
	if err := db.committed(err); err != nil {
		db.writeFailed(key, gen)
		return fmt.Errorf("kv: delete %q: %w", key, err)
	}
	db.written(key, nil, true, gen)
	return nil
}

// applyOne is Set (or Delete) while writes are recorded for transactions.
func (db *DB) applyOne(key, value []byte, del bool) error {
	pb := db.pdb.NewBatch()
	defer pb.Close()
	var err error
	if del {
		err = pb.Delete(key, nil)
	} else {
		err = pb.Set(key, value, nil)
	}
	if err != nil {
		return err
	}
	return db.applyBatch(pb, func() writeSet { return writeSet{keys: [][]byte{bytes.Clone(key)}} }, nil)
}

// committed is the outcome of a write Pebble returned err for: once the
// store has failed, ErrFailed, whatever Pebble said — its WAL may not hold
// the write (see disk.go).
func (db *DB) committed(err error) error {
	if ferr := db.disk.failedErr(); ferr != nil {
		return ferr
	}
	return err
}

// beforeWrite and then written or writeFailed bracket a write of key to
// Pebble for the row cache (rowCache.beforeWrite, rowCache.written).
func (db *DB) beforeWrite(key []byte) cacheStamp {
	if db.cache == nil {
		return cacheStamp{}
	}
	return db.cache.beforeWrite(key)
}

func (db *DB) written(key, val []byte, del bool, gen cacheStamp) {
	if h := db.hooks.afterWrite; h != nil {
		h(key)
	}
	if db.cache != nil {
		db.cache.written(key, val, del, gen)
	}
}

// writeFailed ends a write Pebble refused: the key is dropped from the
// cache, as nothing says what Pebble holds for it now.
func (db *DB) writeFailed(key []byte, gen cacheStamp) {
	if db.cache != nil {
		db.cache.written(key, nil, true, gen)
	}
}

// Batch collects writes to apply atomically with DB.Apply or DB.Write. It
// is not safe for concurrent use. Applying a batch leaves it as it was: it
// may be applied again, or Reset and filled anew. Its writes apply in the
// order they were added: a Set after a DeleteRange that covers its key
// survives it.
type Batch struct {
	ops []BatchOp
	err error // sticky until Reset: an empty key or an invalid range
}

// NewBatch returns an empty batch.
func (db *DB) NewBatch() *Batch { return &Batch{} }

// Set adds a write of value under key. The batch copies both. An empty key
// is not added, and makes Apply of the batch fail with ErrEmptyKey until
// Reset.
func (b *Batch) Set(key, value []byte) {
	if len(key) == 0 {
		b.fail(ErrEmptyKey)
		return
	}
	b.ops = append(b.ops, BatchOp{Kind: OpSet, Key: append([]byte(nil), key...), Value: append([]byte(nil), value...)})
}

// Delete adds a deletion of key. An empty key is not added, and makes Apply
// of the batch fail with ErrEmptyKey until Reset.
func (b *Batch) Delete(key []byte) {
	if len(key) == 0 {
		b.fail(ErrEmptyKey)
		return
	}
	b.ops = append(b.ops, BatchOp{Kind: OpDelete, Key: append([]byte(nil), key...)})
}

// DeleteRange adds the deletion of every key in [start, end); a nil start
// or end is open, as in Scan. The batch copies both. A start after end is
// not added, and makes Apply of the batch fail with ErrInvalidRange until
// Reset.
func (b *Batch) DeleteRange(start, end []byte) {
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		b.fail(fmt.Errorf("%w: delete range from %q to %q: start is after end", ErrInvalidRange, start, end))
		return
	}
	op := BatchOp{Kind: OpDeleteRange, Key: append([]byte{}, start...)}
	if end != nil {
		op.Value = append([]byte{}, end...)
	}
	b.ops = append(b.ops, op)
}

// fail makes the batch's Apply fail with err, the first such error kept.
func (b *Batch) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Len is the number of writes in the batch, range deletions included.
func (b *Batch) Len() int { return len(b.ops) }

// Reset empties the batch — its writes and an empty-key or invalid-range
// error — so that it can be filled again; it keeps its memory for the
// writes to come.
func (b *Batch) Reset() {
	clear(b.ops) // drop the copies of keys and values
	b.ops = b.ops[:0]
	b.err = nil
}

// openRange reports whether b deletes a range with an open end.
func (b *Batch) openRange() bool {
	for _, op := range b.ops {
		if op.Kind == OpDeleteRange && op.Value == nil {
			return true
		}
	}
	return false
}

// Apply commits b atomically: all of its writes or none. After Close it
// fails with ErrClosed, whatever b holds. A batch that was given an empty
// key fails with ErrEmptyKey, one given an invalid range with
// ErrInvalidRange, and either writes nothing. Apply leaves b unchanged.
//
// A batch that deletes a range with an open end waits for the writes in
// flight and holds new ones back until it has committed: the end is found
// as the last key then stored (see DeleteRange).
//
// On a failed store Apply fails with ErrFailed, on a full disk with
// ErrDiskFull, and writes nothing (see Options.NoSync). A batch already
// committing when the disk fills waits for space, or for Close: its batch
// is in the WAL's buffer, and returning before it is written out would
// leave the caller unable to say whether it committed.
func (db *DB) Apply(b *Batch) error {
	alone := b != nil && b.openRange()
	if err := db.enterWriteAs(alone); err != nil {
		return err
	}
	defer db.exitWrite(alone)
	if b == nil {
		return errors.New("kv: apply: nil batch")
	}
	if b.err != nil {
		return b.err
	}
	if len(b.ops) == 0 {
		return nil
	}
	return db.applyOps(b.ops, nil)
}

// applyOps is Apply of ops (valid, not empty), checked first against tx
// when it is not nil; the caller holds writeMu as Apply does.
func (db *DB) applyOps(ops []BatchOp, tx *txnCheck) error {
	pb := db.pdb.NewBatch()
	defer pb.Close()
	ranges := 0
	for _, op := range ops {
		var err error
		switch op.Kind {
		case OpDelete:
			err = pb.Delete(op.Key, nil)
		case OpDeleteRange:
			ranges++
			end := op.Value
			if end == nil {
				if end, err = db.rangeEnd(op.Key); end == nil && err == nil {
					continue // no key at or after start
				}
			}
			if err == nil {
				err = pb.DeleteRange(op.Key, end, nil)
			}
		default:
			err = pb.Set(op.Key, op.Value, nil)
		}
		if err != nil {
			return fmt.Errorf("kv: apply: %w", err)
		}
	}
	var gens []cacheStamp
	var rgen uint64
	if db.cache != nil {
		gens = make([]cacheStamp, len(ops))
		for i, op := range ops {
			if op.Kind != OpDeleteRange {
				gens[i] = db.cache.beforeWrite(op.Key)
			}
		}
		if ranges > 0 {
			rgen = db.cache.beforeRangeDelete()
		}
	}
	err := db.applyBatch(pb, func() writeSet { return opsWriteSet(ops) }, tx)
	if err == ErrConflict {
		for i, op := range ops {
			if gens != nil {
				db.writeFailed(op.Key, gens[i]) // nothing was written
			}
		}
		return err
	}
	err = db.committed(err)
	if ranges > 0 && db.cache != nil {
		db.cache.rangeDeleted(rgen)
	}
	if err != nil {
		for i, op := range ops {
			if gens != nil && op.Kind != OpDeleteRange {
				db.writeFailed(op.Key, gens[i])
			}
		}
		return fmt.Errorf("kv: apply %d writes: %w", len(ops), err)
	}
	// Writes of one stripe in the batch (a key set twice among them) were
	// in flight together, so none of them refreshes its key: the first of
	// two values of a key is never served. Nor does a write beside a range
	// deletion: the range word moved while it was in flight.
	for i, op := range ops {
		if op.Kind == OpDeleteRange {
			continue
		}
		var gen cacheStamp
		if gens != nil {
			gen = gens[i]
		}
		db.written(op.Key, op.Value, op.Kind == OpDelete, gen)
	}
	return nil
}

// rangeEnd is the end bound for a range deletion from start with an open
// end: just past the last key stored, nil when there is none at or after
// start. The caller holds writeMu exclusively, so no key is written past
// it before the deletion commits.
func (db *DB) rangeEnd(start []byte) ([]byte, error) {
	it, err := db.pdb.NewIter(&pebble.IterOptions{LowerBound: start})
	if err != nil {
		return nil, err
	}
	var end []byte
	if it.Last() {
		end = append(bytes.Clone(it.Key()), 0)
	}
	return end, it.Close()
}

// Write applies b atomically, as Apply does, failing with ctx's error if
// ctx is done before the write starts; once it has started, the write is
// not abandoned (not even while it waits for disk space: see Apply). It is
// the write of the Store interface.
func (db *DB) Write(ctx context.Context, b *Batch) error {
	if err := ctx.Err(); err != nil {
		return db.closedOr(fmt.Errorf("kv: write: %w", err))
	}
	return db.Apply(b)
}

// DeleteRange deletes every key in [start, end) atomically; a nil start or
// end is open, as in Scan (both nil: every key). A start after end is
// ErrInvalidRange. It is coherent with the row cache: once it has
// returned, no Get returns a value it deleted, cached or not — every
// cached value is dropped, as the cache cannot tell which keys a range
// holds. With an open end it finds the last key stored and deletes up to
// it, holding other writes back meanwhile (not reads).
func (db *DB) DeleteRange(start, end []byte) error {
	b := Batch{}
	b.DeleteRange(start, end)
	if b.err != nil {
		return db.closedOr(b.err)
	}
	return db.Apply(&b)
}

// Flush writes the memtables out to sstables, so reads that follow hit
// tables (what a benchmark wants after loading). It fails with ErrFailed
// or ErrDiskFull, rather than wait for ever, when the disk cannot take
// the tables: Pebble retries a failed flush until it succeeds.
func (db *DB) Flush() error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	if err := db.disk.err(); err != nil {
		return fmt.Errorf("kv: flush: %w", err)
	}
	done, err := db.pdb.AsyncFlush()
	if err != nil {
		return fmt.Errorf("kv: flush: %w", err)
	}
	tick := time.NewTicker(db.disk.fullPause)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return db.committed(nil)
		case <-db.disk.failedCh:
			return fmt.Errorf("kv: flush: %w", db.disk.err())
		case <-tick.C:
			if db.disk.isFull() {
				return fmt.Errorf("kv: flush: %w", db.disk.err())
			}
		}
	}
}

// Checkpoint writes a consistent copy of the open store into dir, which
// must not exist; the copy opens with Open. Writes may go on meanwhile: the
// copy holds every write acknowledged before the call (NoSync's too: the
// WAL is flushed to its file first) and tears no batch. Table files are
// hard-linked where dir is on the store's filesystem, copied otherwise; a
// linked table costs no space until the store compacts it away. An
// in-memory store cannot be checkpointed, nor one opened ReadOnly (Pebble
// copies the OPTIONS file of the open, which a read-only open does not
// write): open it read-write.
func (db *DB) Checkpoint(dir string) error {
	if err := db.enter(); err != nil {
		return err
	}
	defer db.mu.RUnlock()
	switch {
	case db.opts.InMemory:
		return fmt.Errorf("kv: checkpoint to %s: an in-memory store has no files to copy", dir)
	case db.opts.ReadOnly:
		return fmt.Errorf("kv: checkpoint to %s: %w: Pebble copies the OPTIONS file of a read-write open", dir, ErrReadOnly)
	}
	db.disk.takeDirSyncErr() // one from an earlier checkpoint is not ours
	err := db.pdb.Checkpoint(dir, pebble.WithFlushedWAL())
	if serr := db.disk.takeDirSyncErr(); err == nil && serr != nil {
		err = fmt.Errorf("sync of the checkpoint's directory: %w", serr)
	}
	if err != nil {
		return fmt.Errorf("kv: checkpoint to %s: %w", dir, err)
	}
	return nil
}

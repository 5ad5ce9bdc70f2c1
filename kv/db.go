package kv

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/kv/internal/diskfs"
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
	// gov judges runaway reads after each step (runaway.go); nil with
	// SchedulerDirect.
	gov   *governor
	cache *rowCache // nil when RowCacheSize < 0
	wopts *pebble.WriteOptions
	// tagged says the store's values carry a tag, and may carry an
	// expiry (expiry.go); a store created before TTLs holds raw values.
	tagged bool

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
	// or a full disk refuses writes (see package diskfs).
	disk *diskfs.Health
	// reads watches the table reads, and tells the pool of slow ones
	// (diskreads.go).
	reads *diskReads
	// warm warms the block cache (warmer.go); nil with Options.NoWarm and
	// SchedulerDirect.
	warm *warmer
	// sweep deletes expired keys (sweeper.go); nil on a store whose keys
	// cannot expire, read-only, or with Options.NoSweep.
	sweep *sweeper

	// snapshots are the open snapshots, which Close closes; nil once Close
	// has taken them.
	snapMu    sync.Mutex
	snapshots map[*dbSnapshot]struct{}

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
	if err := db.disk.Err(); err != nil {
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

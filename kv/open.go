package kv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/kv/internal/diskfs"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
	"github.com/coopkv/coopkv/scan"
)

// Opening a store: Pebble under the store's filesystem, then the row
// cache and the read pool around it.

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

	disk := diskfs.NewHealth(o.Logger)
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
	reads := newDiskReads(o.slowRead)
	po.FS = &storeFS{FS: diskfs.New(po.FS, dir, disk), os: o.FS == nil && !o.InMemory, reads: reads}
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
	// The warmer hears of the tables flushes and compactions write from
	// the first flush of Open on; it warms them once the pool runs.
	var warm *warmer
	if !o.NoWarm && o.Scheduler != SchedulerDirect {
		warm = newWarmer(cache, memTables*int64(po.MemTableSize), reads, o.warmHooks)
		warm.listen(events)
		closers = append(closers, warm)
	}

	// A new store is written at the newest format Pebble knows (left to
	// itself Pebble picks its oldest). An existing one keeps its format:
	// raising it is a one-way step (an older Pebble could no longer open
	// the store) that is not Open's to take.
	desc, err := pebble.Peek(dir, po.FS)
	missing := errors.Is(err, os.ErrNotExist) || err == nil && !desc.Exists
	if missing {
		po.FormatMajorVersion = pebble.FormatNewest
	}
	// So is a new store's value format (expiry.go): its values are
	// tagged; an existing store's are as its comparer says.
	po.Comparer = taggedComparer
	if err == nil && desc.Exists {
		var name string
		if name, err = storedComparer(po.FS, desc.ManifestFilename); err == nil && name != taggedComparer.Name {
			po.Comparer = pebble.DefaultComparer // raw values, or Pebble will say what it is
		}
	}
	if err != nil && !missing {
		// Not knowing the store's format, Open must not guess it: a
		// failure to read the directory or the manifest is Open's
		// failure. The store is there (Peek found it): a missing or
		// damaged manifest is a corrupt store, as Pebble would say.
		if isNotExist(err) || invalidRecord(err) {
			err = &corruptError{err}
		}
		err = fmt.Errorf("kv: open %s: %w", dir, err)
	} else if o.ReadOnly && missing {
		// Pebble would create an empty store in memory and then fail to
		// find its manifest; say what is wrong instead.
		err = fmt.Errorf("kv: open %s read-only: no store there", dir)
	} else {
		var pdb *pebble.DB
		if pdb, err = pebble.Open(dir, po); err == nil {
			return finishOpen(dir, o, po, pdb, disk, reads, warm, closers)
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

// invalidRecord reports whether err says a record of a Pebble log (the
// manifest) is damaged.
func invalidRecord(err error) bool {
	for _, e := range []error{record.ErrZeroedChunk, record.ErrInvalidChunk, record.ErrUnexpectedEOF, io.ErrUnexpectedEOF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// lockErr turns a failure to lock the directory — fcntl's EAGAIN or EACCES
// from another process, errLockedHere for a second opener in this one
// (storeFS.Lock) — into ErrLocked, keeping the cause's words.
func lockErr(err error) error {
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || errors.Is(err, errLockedHere) {
		return fmt.Errorf("%w: %w", ErrLocked, err) // both stay reachable
	}
	return err
}

// buildRowCache builds the row cache; a test makes it fail.
var buildRowCache = newRowCache

// finishOpen builds the store around an open Pebble.
func finishOpen(dir string, o Options, po *pebble.Options, pdb *pebble.DB, disk *diskfs.Health, reads *diskReads, warm *warmer, closers []io.Closer) (*DB, error) {
	var err error
	// Check reads table files with the options Pebble runs with.
	po = po.Clone()
	po.EnsureDefaults()
	db := &DB{opts: o, dir: dir, popts: po, pdb: pdb, wopts: pebble.Sync, direct: map[*scan.Direct]struct{}{}, snapshots: map[*dbSnapshot]struct{}{}, closers: closers, disk: disk, reads: reads, warm: warm, groups: resource.NewManager(), closeDone: make(chan struct{})}
	if err := db.checkTableFiles(); err != nil {
		db.closeStorage()
		return nil, fmt.Errorf("kv: open %s: %w", dir, err)
	}
	db.tagged = po.Comparer.Name == taggedComparer.Name
	if o.NoSync {
		db.wopts = pebble.NoSync
	}
	db.oracle.env = db.oracleEnv()
	if o.RowCacheSize > 0 {
		if db.cache, err = buildRowCache(o.RowCacheSize); err != nil {
			db.closeStorage() // Pebble and the closers: the disk-health checker too
			return nil, fmt.Errorf("kv: open %s: row cache: %w", dir, err)
		}
	}
	if o.Scheduler != SchedulerDirect {
		db.gov = newGovernor(&o)
		po := readpool.Options{Workers: o.Workers, MaxWorkers: o.MaxWorkers, MaxTasks: o.MaxTasks, TimeSlice: o.TimeSlice, Spares: o.spares, Governor: db.gov}
		switch o.Scheduler {
		case SchedulerFIFO:
			po.Queue = readpool.NewFIFO()
		case SchedulerWorkStealing:
			po.Queue = readpool.NewWorkStealing()
		case SchedulerPriority:
			db.sched = resource.NewScheduler(db.groups)
			po.Queue, po.Accountant = db.sched, db.sched
			po.CooledSlots = cooledSlots(o.Workers)
		default:
			po.Queue = readpool.NewMLFQ(readpool.MLFQOptions{})
			po.CooledSlots = cooledSlots(o.Workers)
		}
		db.pool, err = readpool.New(po)
		if err != nil {
			db.closeStorage()
			return nil, fmt.Errorf("kv: open %s: %w", dir, err)
		}
		reads.pool.Store(db.pool) // slow table reads tell it from now on
		if warm != nil {
			warm.start(db)
			if !o.InMemory {
				db.loadHotSet()
			}
			if db.savesHotSet() {
				warm.saveTimer = time.AfterFunc(hotSetEvery, db.saveHotSetLater)
			}
		}
	}
	if db.tagged && !o.ReadOnly && !o.NoSweep {
		db.sweep = newSweeper(db, o.sweepHooks)
	}
	return db, nil
}

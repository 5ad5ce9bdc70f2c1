package kv

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// Scheduler names how reads are scheduled.
type Scheduler string

// The schedulers.
const (
	SchedulerMLFQ     Scheduler = "mlfq"     // default when ResourceControl is false
	SchedulerFIFO     Scheduler = "fifo"     // baseline, for comparison
	SchedulerPriority Scheduler = "priority" // implied by ResourceControl
	SchedulerDirect   Scheduler = "direct"   // no pool: reads run on the caller's goroutine (baseline)
	// SchedulerWorkStealing is YATP's single-level queue (FIFO order,
	// workers take batches into local queues and steal from each other):
	// a baseline for the cost of dispatch, with FIFO's blindness to scans.
	SchedulerWorkStealing Scheduler = "steal"
)

// Options configures a store. A nil *Options, and every zero field, means
// the documented default.
type Options struct {
	// InMemory keeps the store in Pebble's in-memory filesystem; dir is
	// then only a name. Nothing survives Close.
	InMemory bool
	// CacheSize is Pebble's block cache in bytes, memtables included
	// (Pebble reserves them in it); 0 = a quarter of the memory the process
	// may use — its cgroup's limit where one is set, else the machine's
	// memory — within 64 MiB and 8 GiB (64 MiB where neither can be read).
	// It is a bound, not an allocation: the cache holds only blocks read.
	// Sized so, point reads of a working set that fits are served from
	// memory, as the peers' are (bbolt and badger read through mmap):
	// YCSB C at 64 MiB over ~110 MB of records ran at ~0.5× bbolt, every
	// miss a pread and a Snappy decode (README, Benchmarks). Stats
	// (Storage.BlockCacheCapacity) shows the size in force.
	CacheSize int64
	// RowCacheSize is the value cache in front of Get, in bytes; 0 =
	// 32 MiB; < 0 turns it off. A key is cached from its second miss, so
	// that keys read once cost no copy into it. The keys and values live
	// off the Go heap, in memory mapped for the cache and used as it
	// fills, so its RSS is what it holds, at most the size, and the
	// collector neither scans nor doubles it; its index, ~100 bytes an
	// entry, is on the heap and counted in the size. It pays where the hot
	// keys fit: a hit skips Pebble's memtables, filters, index and block,
	// and the read pool. Size it to the hot keys, beside CacheSize (the
	// README's Defaults give the measurements).
	RowCacheSize int64
	// RowCacheHitsInPool sends Gets that hit the row cache through the
	// read pool like misses. By default (false) a hit is answered on the
	// caller's goroutine, without a task or a worker, and is still counted
	// in the pool's figures (Bypassed) and charged to its resource group;
	// a group out of tokens takes the pool's path either way.
	RowCacheHitsInPool bool
	// NoSync makes writes return before they reach the disk. A crash may
	// then lose the most recent writes, never tears a batch, and never
	// loses a write older than one it keeps. Not only a machine crash: the
	// WAL's current block (up to 32 KiB of writes, however old, if the
	// store then sits idle) is held in the process until it fills, a synced
	// write or Flush pushes it out, or the store closes, so a killed
	// process loses it too (kv/proccrash_test.go measures this).
	//
	// Synced or not, a write the disk refuses is an error, never a panic.
	// A failed write or sync of the WAL (or of the MANIFEST) fails the
	// store: that write and every later one return ErrFailed, and the
	// directory is left as it was at the failure. Reads go on, from the
	// memtables and the tables on disk, and they may return the value of
	// a write that failed with ErrFailed: its batch reached the memtable
	// before its sync failed, and after a failed fsync nobody can say
	// whether it is on disk — a reopen may or may not have it (whole,
	// never torn), as with any write whose call failed. Every write
	// acknowledged before the failure survives a reopen. A full disk
	// (ENOSPC) is not a failure: writes fail with ErrDiskFull until a write
	// reaches the disk again or a second passes without a new ENOSPC, and
	// the writes already committing wait for space (or for Close) instead
	// of failing. Pebble retries a flush that met it at once (after a
	// pause here) and a compaction over tables of the level below after 30
	// s, the time it keeps a failed compaction's span off limits. Stats and
	// /metrics say both.
	NoSync bool
	// Workers is the number of read-pool workers that may run on the CPU
	// at once; 0 = runtime.GOMAXPROCS(0). The pool bounds the CPU, not the
	// reads in flight: a read that waits on a slow disk (its table reads'
	// moving average at 30 µs or more, far above the page cache's) does
	// not count against it, and another ready read runs meanwhile, up to
	// MaxWorkers in all — as Go's runtime gives a P away from a thread
	// blocked in a system call. Counted as running, a read blocked in a
	// pread held its worker: on a disk of 1 ms a read the pool served a
	// tenth of the Gets a goroutine per request did (README, Benchmarks).
	Workers int
	// MaxWorkers bounds the reads the pool runs at once, those waiting on
	// the disk included; 0 = 64 × Workers (readpool.Options.MaxWorkers):
	// on a disk of 1 ms a read, as many reads in flight as a goroutine per
	// request would keep under a load of a few dozen clients, each costing
	// a goroutine's stack. Equal to Workers, a read waiting on the disk
	// holds its worker.
	MaxWorkers int
	// MaxTasks is how many reads may be queued or running before reads
	// fail with ErrBusy; 0 = Workers × 2000. Up to Workers Gets more may
	// run their first step on their callers' goroutines meanwhile
	// (readpool.Options.MaxTasks).
	MaxTasks int
	// TimeSlice is how long a read runs before it yields; 0 = 1 ms. A
	// worker gives its P back to the program's other goroutines, timers
	// included, every quarter slice or 100 µs, whichever is less: beside
	// 32 scans a Get due on a timer waited ~80 µs at the median, where a
	// quarter slice alone left it ~150 µs (README, Benchmarks).
	TimeSlice time.Duration
	// ResourceControl schedules reads by resource group
	// (DB.ResourceGroups, WithResourceGroup) with the priority scheduler,
	// instead of by MLFQ level: groups get weighted shares of the pool,
	// limits and a class each.
	ResourceControl bool
	// Runaway is the runaway rule for every read without resource control
	// (under it, each group's resource.GroupConfig.Runaway): a read past
	// its limits of worker time or rows read is counted, run at the lowest
	// priority or ended with ErrRunaway from its next step, and watched
	// (see resource.RunawayRule). Reads in cooldown take turns at a
	// quarter of the workers, at least one, and read in batches of 64
	// rows, after each of which their consumer gives its P back, so that
	// they leave the program's own goroutines a P. nil = none. Reads of
	// SchedulerDirect are not watched: they have no steps.
	Runaway *resource.RunawayRule
	// Scheduler is "" (mlfq, or priority with ResourceControl), mlfq,
	// fifo, steal or direct.
	Scheduler Scheduler
	// Logger receives Pebble's log lines and the events that need an
	// operator: background errors (a failed flush or compaction) and data
	// corruption at Error, write stalls, slow disks and low disk space at
	// Warn; routine lines ("Found 0 WALs") at Info. nil = warnings and
	// errors go to slog.Default() (as it is at Open), the rest is dropped.
	Logger *slog.Logger
	// MaxTxnBytes bounds one transaction's buffered writes, keys and
	// values, in bytes; 0 = 64 MiB. Past it Txn.Set and Txn.Delete fail
	// with ErrTxnTooLarge: a Txn's writes live in memory until Commit, and
	// Commit applies them as one batch.
	MaxTxnBytes int64
	// ReadOnly opens an existing store for reading only: Set, Delete and
	// Apply fail with ErrReadOnly, Pebble runs no flush or compaction, and
	// the store's files are left as they were (kvctl's offline reads and
	// check use it). A missing store is an error, not created.
	ReadOnly bool
	// NoWarm turns off warming: by default the block cache and the row
	// cache warm themselves in the background, as read-pool work at the
	// lowest priority (charged to no resource group) — the blocks of the
	// tables that flushes and compactions write, while the block cache has
	// room for them and the disk is not slow, and after Open the hot set
	// that the store saved in its directory at Close and every few
	// minutes while open (warm.go, hotset.go). A missing or damaged
	// hot-set file is ignored with a log line. Close does not wait for
	// warming. Stats.Warm says what it did.
	NoWarm bool

	// NoSweep turns off the deletion of expired keys in the background
	// (see DB.SetWithTTL): they still read as missing, but their space
	// comes back only when they are overwritten or deleted.
	NoSweep bool
	// TrimWAL keeps the write-ahead log of a store whose keys expire
	// within a share of its tables (a twelfth, at least 1 MiB; see
	// walbudget.go): the sweeper flushes the memtable once the log
	// outgrows it. Until a memtable flushes, its log keeps every write,
	// those long expired and swept too, so by default a small store of
	// short-lived keys holds up to a memtable's worth of log (64 MiB on
	// a machine of 2 GiB or more), and the old logs Pebble keeps to
	// reuse. With TrimWAL its disk follows its live data; the price is
	// reads served from tables rather than the memtable, and more
	// compaction, which is why it is off (the measurements are in
	// cmd/kvbench's README, "Keys that expire"). Without the sweeper
	// (NoSweep) it does nothing.
	TrimWAL bool
	// Clock is the time keys with a TTL expire by (SetWithTTL); nil =
	// time.Now. Tests of code that uses TTLs can move it on rather than
	// sleep. Only its wall time is used; it must not go back.
	Clock func() time.Time

	// spares is readpool.Options.Spares: tests that hold the only worker
	// to queue point reads behind it turn the spare off (-1).
	spares int
	// slowRead is where the table reads' moving average makes the disk
	// slow (0 = defaultSlowRead): the race detector makes reads from
	// memory slow, and a test of something else raises it.
	slowRead time.Duration
	// warmHooks let tests watch and hold the warmer (warmer.go).
	warmHooks *warmHooks
	// sweepHooks let tests watch the sweeper (sweeper.go).
	sweepHooks *sweepHooks

	// FS is, for experts, the filesystem Pebble uses
	// (github.com/cockroachdb/pebble/v2/vfs): Pebble's error-injecting
	// errorfs or crashable MemFS in tests, or a filesystem of your own.
	// nil = the operating system's (with Pebble's disk-health checks), or
	// memory with InMemory. It wins over InMemory. Whatever it is, the
	// store sees its write errors before Pebble does (see ErrFailed).
	FS vfs.FS
}

const (
	defaultRowCacheSize = 32 << 20
	defaultMaxTxnBytes  = 64 << 20
)

// processMemoryOnce reads the process's memory limit once: it does not
// change under a running process often enough to read files per Open.
var processMemoryOnce = sync.OnceValue(processMemory)

func (o *Options) ensureDefaults() {
	if o.CacheSize == 0 {
		o.CacheSize = defaultCacheSize(processMemoryOnce())
	}
	if o.RowCacheSize == 0 {
		o.RowCacheSize = defaultRowCacheSize
	}
	if o.MaxTxnBytes == 0 {
		o.MaxTxnBytes = defaultMaxTxnBytes
	}
	// The pool's fields take the pool's defaults.
	po := readpool.Options{Workers: o.Workers, MaxWorkers: o.MaxWorkers, MaxTasks: o.MaxTasks, TimeSlice: o.TimeSlice}
	po.EnsureDefaults()
	o.Workers, o.MaxWorkers, o.MaxTasks, o.TimeSlice = po.Workers, po.MaxWorkers, po.MaxTasks, po.TimeSlice
	if o.Scheduler == "" {
		o.Scheduler = SchedulerMLFQ
		if o.ResourceControl {
			o.Scheduler = SchedulerPriority
		}
	}
	if o.Scheduler == SchedulerPriority {
		o.ResourceControl = true // the priority scheduler is resource control
	}
	if o.Logger == nil {
		o.Logger = defaultLogger()
	}
}

// Schedulers lists the schedulers Options.Scheduler accepts, the default
// first.
func Schedulers() []Scheduler {
	return []Scheduler{SchedulerMLFQ, SchedulerFIFO, SchedulerWorkStealing, SchedulerDirect, SchedulerPriority}
}

// WithDefaults returns o with its zero fields set to the defaults Open
// would use (see the fields), for a program that shows or starts from
// them.
func (o Options) WithDefaults() Options {
	o.ensureDefaults()
	return o
}

// validate reports every problem at once.
func (o *Options) validate() error {
	var errs []error
	if o.CacheSize < 0 {
		errs = append(errs, fmt.Errorf("kv: CacheSize %d is negative", o.CacheSize))
	}
	// The pool's fields, in the store's words (readpool.Options.Validate
	// would name the pool's options).
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("kv: Workers %d is negative", o.Workers))
	}
	if o.MaxTasks < 0 {
		errs = append(errs, fmt.Errorf("kv: MaxTasks %d is negative", o.MaxTasks))
	}
	if o.MaxWorkers < 0 {
		errs = append(errs, fmt.Errorf("kv: MaxWorkers %d is negative", o.MaxWorkers))
	} else if o.MaxWorkers != 0 && o.Workers > 0 && o.MaxWorkers < o.Workers {
		errs = append(errs, fmt.Errorf("kv: MaxWorkers %d is below Workers %d", o.MaxWorkers, o.Workers))
	}
	if o.TimeSlice < 0 {
		errs = append(errs, fmt.Errorf("kv: TimeSlice %v is negative", o.TimeSlice))
	}
	if o.MaxTxnBytes < 0 {
		errs = append(errs, fmt.Errorf("kv: MaxTxnBytes %d is negative", o.MaxTxnBytes))
	}
	if o.Scheduler != "" && !slices.Contains(Schedulers(), o.Scheduler) {
		errs = append(errs, fmt.Errorf("kv: unknown scheduler %q (want one of %v)", o.Scheduler, Schedulers()))
	}
	if err := o.Runaway.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("kv: Runaway: %w", err))
	}
	if o.ResourceControl && o.Scheduler != "" && o.Scheduler != SchedulerPriority {
		errs = append(errs, fmt.Errorf("kv: resource control schedules with the %q scheduler, not %q", SchedulerPriority, o.Scheduler))
	}
	return errors.Join(errs...)
}

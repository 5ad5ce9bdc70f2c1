package main

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/kv"
)

// config is everything one kvbench run is told by its root flags: the
// engine's (bench.Config) and the embedded store's. A workload's own
// flags are bound to the workload. The root command binds its flags to a
// config of its own, so there are no global flag variables and tests can
// build as many commands as they like.
type config struct {
	bench.Config
	dir       string        // store directory, kept; "" = a temporary one, removed afterwards
	workers   int           // read-pool workers; 0 = GOMAXPROCS
	maxTasks  int           // reads queued or running before kv: busy; 0 = the store's default, workers × 2000
	timeSlice time.Duration // how long a pooled read runs before it yields
	rowCache  int64         // the row cache in front of Get, in bytes; 0 = off
	cacheSize int64         // Pebble's block cache, in bytes; 0 = kv's default
	// diskLatency is the simulated disk's latency on every table read of
	// the measured stores (cmd/internal/slowdisk); 0 = none.
	diskLatency time.Duration
	sync        bool   // fsync every write of the measured phases (never the load's)
	noWarm      bool   // kv.Options.NoWarm: the caches do not warm themselves
	noSweep     bool   // kv.Options.NoSweep: expired keys are not deleted in the background
	trimWAL     bool   // kv.Options.TrimWAL: the sweeper keeps the write-ahead log within a share of the tables
	admin       string // "" = no admin endpoint; validate makes it HOST:PORT (see adminAddr)

	// workload is the --workload of old, hidden: it names the workload a
	// subcommand now names, and validate says so.
	workload []string
}

// storeDefaults are kv's own defaults (kv.Options), so that a plain run
// measures the store as an application opens it.
var storeDefaults = kv.Options{}.WithDefaults()

// diskLatencyHelp is --disk-latency's help.
const diskLatencyHelp = "simulate a slow disk (0 = off): every read of a table (.sst) blocks its thread for `DURATION` " +
	"with a nanosleep inside ReadAt, as a pread waiting for the device does; the page cache still answers the read. " +
	"A fixed latency per read, no queue, no bandwidth limit: the figures are a simulated disk's, not a real one's. " +
	"The load runs without it (it would only be slow); the warm-ups and measured phases run with it. " +
	"Use it with --cache-size below the data's size, so that reads miss the block cache " +
	"(e.g. --keys 300000 --value-size 1000 --row-cache 0 --cache-size 16777216: 300 MB of data, a 16 MiB cache)"

// knownSchedulers are the read schedulers kvbench can compare; a default
// run measures the first three, in this order. priority is resource
// control with every read in the default group; the groups workloads
// always run on it, and only on it.
var knownSchedulers = func() []string {
	var names []string
	for _, s := range kv.Schedulers() {
		names = append(names, string(s))
	}
	return names
}()

// defaultSchedulers are the schedulers a run measures unless told.
var defaultSchedulers = []string{"mlfq", "fifo", "direct"}

// addFlags registers every workload's flags on fs, bound to c's fields,
// with the defaults of a plain kvbench run.
func (c *config) addFlags(fs *pflag.FlagSet) {
	c.Config.AddFlags(fs)
	fs.StringVar(&c.dir, "dir", "", "store directory to use and keep (default: a temporary directory, removed afterwards)")
	fs.IntVar(&c.workers, "workers", 0, "read-pool workers (0 = GOMAXPROCS)")
	fs.IntVar(&c.maxTasks, "max-tasks", 0, "reads queued or running in the pool before reads fail with \"kv: busy\" (0 = 2000 × workers)")
	fs.DurationVar(&c.timeSlice, "time-slice", storeDefaults.TimeSlice, "how long a pooled read runs before it yields to the next")
	fs.Int64Var(&c.rowCache, "row-cache", storeDefaults.RowCacheSize, "row cache in front of Get, in `BYTES` (0 = off)")
	fs.Int64Var(&c.cacheSize, "cache-size", 0, "Pebble's block cache, memtables included, in `BYTES` "+
		"(0 = kv's default: a quarter of the memory the process may use, within 64 MiB and 8 GiB); "+
		"below the data's size, reads miss it and go to the disk (see --disk-latency)")
	fs.DurationVar(&c.diskLatency, "disk-latency", 0, diskLatencyHelp)
	fs.BoolVar(&c.noWarm, "no-warm", false, "turn the caches' warming off (kv.Options.NoWarm): by default the stores warm their block cache "+
		"in the background with the CPU the process leaves, the load's tables and, after each reopen, the hot set the load's store saved")
	fs.BoolVar(&c.noSweep, "no-sweep", false, "turn the deletion of expired keys in the background off (kv.Options.NoSweep), "+
		"to compare the ttl workload's Gets with and without the sweeper")
	fs.BoolVar(&c.trimWAL, "trim-wal", false, "keep the write-ahead log of a store whose keys expire within a share of its tables (kv.Options.TrimWAL): "+
		"the ttl workload's disk follows its live sessions, and its Gets read from tables rather than the memtable")
	fs.BoolVar(&c.sync, "sync", false, "fsync every write of the measured phases (default off: writes are not synced, "+
		"as in the YCSB comparison; a crash may lose the last writes). The load is never synced: it is flushed at its end")
	fs.StringSliceVar(&c.Schedulers, "schedulers", slices.Clone(defaultSchedulers),
		"schedulers to compare, comma-separated: "+strings.Join(knownSchedulers, ", ")+
			" (groups and groups-steps run once, on priority, whatever this says)")
	fs.StringVar(&c.admin, "admin", "", "serve the store's admin endpoint (for kvctl --addr) over HTTP on `ADDR` while running; "+
		"no host (:7070) means 127.0.0.1, 0.0.0.0:7070 every interface")
	fs.StringSliceVar(&c.workload, "workload", nil, "gone: name the workload as a subcommand")
	_ = fs.MarkHidden("workload") // it exists: the flag is registered just above
}

// validate tidies the scheduler list and reports every problem with c
// and with w's flags at once, joined (errors.Join).
func (c *config) validate(w bench.Workload) error {
	c.Schedulers = trimAll(c.Schedulers)
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if names := trimAll(c.workload); len(names) > 0 {
		var ours []string // the names that are not YCSB's
		for _, name := range names {
			if strings.HasPrefix(name, "ycsb") {
				errs = append(errs, ycsbMoved(name))
			} else {
				ours = append(ours, name)
			}
		}
		if len(ours) > 0 {
			bad("--workload is gone: name the workload as a subcommand, one a run, as in \"kvbench %s\" (workloads: %s)",
				ours[0], strings.Join(workloadNames(), ", "))
		}
	}
	errs = append(errs, c.Config.Validate())
	// The store's knobs: each wrong when its test holds.
	for _, k := range []struct {
		wrong bool
		msg   string
	}{
		{c.workers < 0, fmt.Sprintf("--workers must not be negative, not %d", c.workers)},
		{c.maxTasks < 0, fmt.Sprintf("--max-tasks must not be negative, not %d (0 = 2000 × workers)", c.maxTasks)},
		{c.timeSlice <= 0, fmt.Sprintf("--time-slice must be positive, not %v", c.timeSlice)},
		{c.rowCache < 0, fmt.Sprintf("--row-cache must not be negative, not %d (0 turns the row cache off)", c.rowCache)},
		{c.cacheSize < 0, fmt.Sprintf("--cache-size must not be negative, not %d (0 = kv's default)", c.cacheSize)},
		{c.diskLatency < 0, fmt.Sprintf("--disk-latency must not be negative, not %v (0 = no simulated latency)", c.diskLatency)},
	} {
		if k.wrong {
			errs = append(errs, errors.New(k.msg))
		}
	}
	errs = append(errs, w.Validate())
	if len(c.Schedulers) == 0 {
		bad("--schedulers names no scheduler (known: %s)", strings.Join(knownSchedulers, ", "))
	}
	for _, s := range c.Schedulers {
		if !slices.Contains(knownSchedulers, s) {
			bad("unknown scheduler %q (known: %s)", s, strings.Join(knownSchedulers, ", "))
		}
	}
	if hasDuplicates(c.Schedulers) {
		bad("--schedulers names a scheduler twice")
	}
	if c.admin != "" {
		if addr, err := adminAddr(c.admin); err != nil {
			errs = append(errs, err)
		} else {
			c.admin = addr
		}
	}
	return errors.Join(errs...)
}

// workloadNames are the workloads' names, their subcommands.
func workloadNames() []string {
	var names []string
	for _, w := range bench.Workloads() {
		names = append(names, w.Name())
	}
	return names
}

// resolvedWorkers is the pool size the store will run with.
func (c *config) resolvedWorkers() int {
	if c.workers == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return c.workers
}

func hasDuplicates(names []string) bool {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

// trimAll trims spaces around each name and drops empty ones, so
// "mlfq, fifo" and "mlfq,fifo," mean "mlfq,fifo".
func trimAll(names []string) []string {
	var out []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// ycsbMoved is the error for a YCSB workload asked of kvbench: YCSB A–F
// run in go-ycsb's runner, the nested module cmd/kvbench/ycsb, which
// peers' figures come from too.
func ycsbMoved(name string) error {
	return fmt.Errorf("%q: kvbench runs no YCSB workload; YCSB A–F run in the go-ycsb runner: "+
		"cd cmd/kvbench/ycsb && go run . --workloads a,b,c,d,e,f (see its README.md)", name)
}

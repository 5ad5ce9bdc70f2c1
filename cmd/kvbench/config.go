package main

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// config is everything one kvbench run is told by its flags. The root
// command binds its flags to a config of its own, so there are no global
// flag variables and tests can build as many commands as they like.
type config struct {
	dir           string        // store directory, kept; "" = a temporary one, removed afterwards
	keys          int64         // keys loaded before the timed phases
	valueSize     int           // bytes per value
	duration      time.Duration // timed phase, per scheduler and workload
	warmup        time.Duration // untimed phase before each timed one
	workers       int           // read-pool workers; 0 = GOMAXPROCS
	maxTasks      int           // reads queued or running before kv: busy; 0 = the store's default, workers × 2000
	timeSlice     time.Duration // how long a pooled read runs before it yields
	rowCache      int64         // the row cache in front of Get, in bytes; 0 = off
	sync          bool          // fsync every write of the measured phases (never the load's)
	clients       int           // goroutines issuing the foreground operations
	scanners      int           // noisy, cop: goroutines looping on long scans or aggregates
	scanLen       int           // scan, groups: keys per scan
	multiGetKeys  int           // multiget: keys per MultiGet
	longScanLen   int           // noisy, cop: keys per long scan or aggregate, capped at keys
	think         time.Duration // noisy, cop: one Get client's interval between Gets
	arrival       string        // noisy, cop: when the Get clients' Gets are due, arrivalFixed or arrivalThink
	noQuiet       bool          // noisy: skip the quiet phase (its Gets without the scans) before the measured one
	oltpRate      float64       // groups: oltp's point Gets per second, over all clients
	groupScanners int           // groups, groups-steps: scan goroutines per scanning group
	workloads     []string      // known workload names, in the order given, each baseline before its workload
	schedulers    []string      // known scheduler names, in the order given
	seed          uint64        // seeds every random choice
	jsonPath      string        // "" = no JSON report; "-" = stdout (the table then goes to stderr)
	plotPath      string        // "" = no plot; .png or .svg
	admin         string        // "" = no admin endpoint; validate makes it HOST:PORT (see adminAddr)
	quiet         bool          // no progress output

	// onPacedGet, when set (by tests), is called with the latency from
	// when it was due and the service time of every Get that a paced
	// client records (see pacedGets), from the clients' goroutines.
	onPacedGet func(e2e, service time.Duration)

	// rows is set by validate when a workload of the run reads values as
	// coprocessor rows: then the store's values are rows (see valueMaker).
	rows bool
}

// Defaults of the store's knobs, as kv's own (kv.Options) so that a plain
// run measures the store as an application opens it.
const (
	defaultTimeSlice = time.Millisecond
	defaultRowCache  = 32 << 20
)

// jsonStdout is the --json path that means standard output.
const jsonStdout = "-"

// knownSchedulers are the read schedulers kvbench can compare; a default
// run measures the first three, in this order. priority is resource
// control with every read in the default group; the groups workloads
// always run on it, and only on it.
var knownSchedulers = []string{"mlfq", "fifo", "steal", "direct", groupsScheduler}

// defaultSchedulers are the schedulers a run measures unless told.
var defaultSchedulers = []string{"mlfq", "fifo", "direct"}

// addFlags registers the run's flags on fs, bound to c's fields, with the
// defaults of a plain `kvbench` run.
func (c *config) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.dir, "dir", "", "store directory to use and keep (default: a temporary directory, removed afterwards)")
	fs.Int64Var(&c.keys, "keys", 200_000, "keys to load")
	fs.IntVar(&c.valueSize, "value-size", 100, "value size in bytes")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "measured time per scheduler and workload")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured warm-up before each measured phase")
	fs.IntVar(&c.workers, "workers", 0, "read-pool workers (0 = GOMAXPROCS)")
	fs.IntVar(&c.maxTasks, "max-tasks", 0, "reads queued or running in the pool before reads fail with \"kv: busy\" (0 = 2000 × workers)")
	fs.DurationVar(&c.timeSlice, "time-slice", defaultTimeSlice, "how long a pooled read runs before it yields to the next")
	fs.Int64Var(&c.rowCache, "row-cache", defaultRowCache, "row cache in front of Get, in `BYTES` (0 = off)")
	fs.BoolVar(&c.sync, "sync", false, "fsync every write of the measured phases (default off: writes are not synced, "+
		"as in the YCSB comparison; a crash may lose the last writes). The load is never synced: it is flushed at its end")
	fs.IntVar(&c.clients, "clients", 4, "client goroutines (noisy: the Get clients; groups: the oltp group's)")
	fs.IntVar(&c.scanners, "scanners", 8, "noisy, cop: goroutines looping on long scans (cop: on aggregates)")
	fs.IntVar(&c.scanLen, "scan-len", 1_000, "scan, groups: keys per range scan")
	fs.IntVar(&c.multiGetKeys, "multiget-keys", 100, "multiget: keys per MultiGet (and per loop of Gets)")
	fs.IntVar(&c.longScanLen, "long-scan-len", 100_000, "noisy, cop: keys per long scan or aggregate (at most --keys)")
	fs.DurationVar(&c.think, "think", 200*time.Microsecond, "noisy, cop: one Get client's interval: between two Gets due (--arrival fixed) or after one returns (--arrival think); "+
		"the clients offer --clients / --think Gets per second")
	fs.StringVar(&c.arrival, "arrival", arrivalFixed, "noisy, cop: when each Get client's Gets are due, "+strings.Join(arrivals, " or ")+
		": fixed, on a schedule of the client's own (Get i at i × --think after a random phase), a late Get issued at once, none skipped; "+
		"think, --think after the previous Get returned. Latency counts from when a Get was due")
	fs.BoolVar(&c.noQuiet, "no-quiet", false, "noisy: skip the quiet phase, its Get clients alone for --duration before the measured phase, "+
		"whose Get p99 the p99 beside the scans is judged against")
	fs.Float64Var(&c.oltpRate, "oltp-rate", 2_000, "groups: the oltp group's point Gets per second, over --clients goroutines on a fixed schedule")
	fs.IntVar(&c.groupScanners, "group-scanners", 64, "groups, groups-steps: goroutines looping on scans in each scanning group; shares hold while groups are backlogged, and with too few a group whose queue runs dry gives its share away (the pool is work-conserving)")
	fs.StringSliceVar(&c.workloads, "workload", []string{"noisy"}, "workloads, comma-separated: "+strings.Join(workloadNames(), ", "))
	fs.StringSliceVar(&c.schedulers, "schedulers", slices.Clone(defaultSchedulers),
		"schedulers to compare, comma-separated: "+strings.Join(knownSchedulers, ", ")+
			" (groups and groups-steps run once, on priority, whatever this says)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed for keys, values and every random choice")
	fs.StringVar(&c.jsonPath, "json", "", "write the results as JSON to `FILE`; - writes them to stdout, and the table to stderr instead")
	fs.StringVar(&c.plotPath, "plot", "", "plot latency percentiles to `FILE` (.png or .svg)")
	fs.StringVar(&c.admin, "admin", "", "serve the store's admin endpoint (for kvctl --addr) over HTTP on `ADDR` while running; "+
		"no host (:7070) means 127.0.0.1, 0.0.0.0:7070 every interface")
	fs.BoolVarP(&c.quiet, "quiet", "q", false, "no progress output")
}

// validate tidies the name lists, adds to the workloads each one's
// baseline that they do not name (before it), and reports every problem
// with c at once, as one error.
func (c *config) validate() error {
	c.workloads = trimAll(c.workloads)
	c.schedulers = trimAll(c.schedulers)
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.keys < 1 {
		bad("--keys must be at least 1, not %d", c.keys)
	}
	if c.valueSize < 1 {
		bad("--value-size must be at least 1, not %d", c.valueSize)
	}
	if c.duration <= 0 {
		bad("--duration must be positive, not %v", c.duration)
	}
	if c.warmup < 0 {
		bad("--warmup must not be negative, not %v", c.warmup)
	}
	if c.workers < 0 {
		bad("--workers must not be negative, not %d", c.workers)
	}
	if c.maxTasks < 0 {
		bad("--max-tasks must not be negative, not %d (0 = 2000 × workers)", c.maxTasks)
	}
	if c.timeSlice <= 0 {
		bad("--time-slice must be positive, not %v", c.timeSlice)
	}
	if c.rowCache < 0 {
		bad("--row-cache must not be negative, not %d (0 turns the row cache off)", c.rowCache)
	}
	if c.clients < 1 {
		bad("--clients must be at least 1, not %d", c.clients)
	}
	if c.scanners < 0 {
		bad("--scanners must not be negative, not %d", c.scanners)
	}
	if c.multiGetKeys < 1 {
		bad("--multiget-keys must be at least 1, not %d", c.multiGetKeys)
	}
	if slices.Contains(c.workloads, "multiget") && c.clients < 2 {
		bad("--workload multiget pairs its clients (a MultiGet and Gets of the same keys): --clients must be at least 2, not %d", c.clients)
	}
	if c.scanLen < 1 {
		bad("--scan-len must be at least 1, not %d", c.scanLen)
	}
	if c.longScanLen < 1 {
		bad("--long-scan-len must be at least 1, not %d", c.longScanLen)
	}
	if c.think < 0 {
		bad("--think must not be negative, not %v", c.think)
	}
	if !slices.Contains(arrivals, c.arrival) {
		bad("unknown --arrival %q (known: %s)", c.arrival, strings.Join(arrivals, ", "))
	} else if c.arrival == arrivalFixed && c.think == 0 {
		bad("--think 0 with --arrival fixed would make every Get due at once; give --arrival think for Gets back to back")
	}
	if !(c.oltpRate > 0) || math.IsInf(c.oltpRate, 0) {
		bad("--oltp-rate must be a positive number of Gets per second, not %v", c.oltpRate)
	} else if every := float64(max(c.clients, 1)) / c.oltpRate; every < 1e-6 || every > 3600 {
		// Each client's Gets are due every clients/rate seconds: below a
		// microsecond all at once (as --think 0), past an hour never.
		bad("--oltp-rate %v gives each of %d clients a Get due every %.3gs; give a rate for which that is between 1µs and 1h", c.oltpRate, max(c.clients, 1), every)
	}
	if c.groupScanners < 1 {
		bad("--group-scanners must be at least 1, not %d", c.groupScanners)
	}
	if len(c.workloads) == 0 {
		bad("--workload names no workload (known: %s)", strings.Join(workloadNames(), ", "))
	}
	for _, w := range c.workloads {
		if _, ok := lookupWorkload(w); !ok {
			if strings.HasPrefix(w, "ycsb") {
				errs = append(errs, ycsbMoved(w))
				continue
			}
			bad("unknown workload %q (known: %s)", w, strings.Join(workloadNames(), ", "))
		}
	}
	if hasDuplicates(c.workloads) {
		bad("--workload names a workload twice")
	}
	if len(c.schedulers) == 0 {
		bad("--schedulers names no scheduler (known: %s)", strings.Join(knownSchedulers, ", "))
	}
	for _, s := range c.schedulers {
		if !slices.Contains(knownSchedulers, s) {
			bad("unknown scheduler %q (known: %s)", s, strings.Join(knownSchedulers, ", "))
		}
	}
	if hasDuplicates(c.schedulers) {
		bad("--schedulers names a scheduler twice")
	}
	if c.plotPath != "" {
		if _, err := plotFormat(c.plotPath); err != nil {
			errs = append(errs, err)
		}
	}
	if c.admin != "" {
		if addr, err := adminAddr(c.admin); err != nil {
			errs = append(errs, err)
		} else {
			c.admin = addr
		}
	}
	if len(errs) > 0 {
		return problems(errs)
	}
	c.workloads = withBaselines(c.workloads)
	for _, name := range c.workloads {
		w, _ := lookupWorkload(name)
		c.rows = c.rows || w.rows
	}
	return nil
}

// withBaselines returns names with each workload's baseline that names
// does not already hold just before it, so that one run measures both.
func withBaselines(names []string) []string {
	var out []string
	for _, name := range names {
		if w, _ := lookupWorkload(name); w.baseline != "" &&
			!slices.Contains(names, w.baseline) && !slices.Contains(out, w.baseline) {
			out = append(out, w.baseline)
		}
		out = append(out, name)
	}
	return out
}

// problems is several configuration errors reported at once, on one line.
type problems []error

func (p problems) Error() string {
	msgs := make([]string, len(p))
	for i, err := range p {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (p problems) Unwrap() []error { return p }

// resolvedWorkers is the pool size the store will run with.
func (c *config) resolvedWorkers() int {
	if c.workers == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return c.workers
}

// plotFormat returns the image format that path's extension asks for.
func plotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--plot %s: the file must end in .png or .svg", path)
	}
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
// "get, scan" and "get,scan," mean "get,scan".
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

package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// config is what the flags ask for.
type config struct {
	stores     []string // names from knownStores, in the order given
	workloads  []string // a … f, in run order (see runOrder)
	records    int64
	operations int64
	threads    int
	fieldCount int64
	fieldLen   int64
	jsonPath   string // "" = no JSON
	markdown   bool
	dir        string   // where the stores' temporary directories go; "" = os.TempDir()
	props      []string // extra go-ycsb properties, name=value, for every store
	// isolate runs each store in a child process of its own (runIsolated),
	// so that its peak resident set is its own.
	isolate    bool
	cpuProfile string // "" = none; with isolate, each child writes cpuProfile.<store>
	// profilePhase limits cpuProfile to one phase ("load" or a workload);
	// "" profiles the whole run.
	profilePhase string
	// reopen closes each store after its load and opens it again on its
	// directory before each workload (reopen.go): the restart mode.
	reopen bool
	// timeline records each phase's operations per second (timeline.go);
	// on by default with reopen.
	timeline bool
	// child says this process is a store's child under --isolate: it
	// writes only the JSON and its progress, no tables (hidden flag).
	child bool
}

// timelineFlag is the flag of config.timeline, whose default follows
// --reopen.
const timelineFlag = "timeline"

// runOrder is the order the workloads run in on one loaded store, YCSB's
// documented order: the workloads that only read and update first, then
// D and E, which insert records and so grow the store the others read.
// (YCSB's documentation reloads the store before E; this runner does not:
// see README.md.)
var runOrder = []string{"a", "b", "c", "f", "d", "e"}

// newRootCmd builds the command, with its flags bound to a config of its
// own.
func newRootCmd() *cobra.Command {
	var (
		cfg       config
		stores    string
		workloads string
	)
	cmd := &cobra.Command{
		Use:   "ycsb",
		Short: "YCSB A–F with go-ycsb against coopkv, badger and bolt",
		Long: `ycsb loads each store once, into a fresh temporary directory, and runs
the YCSB core workloads on it in the order a, b, c, f, d, e, with go-ycsb
v1.0.3's client and measurements. With --reopen it closes each store and
opens it again on its directory before each workload, and reports how
each workload's throughput went second by second (--timeline). Results go
to stdout; progress to stderr.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.stores = splitList(stores)
			cfg.workloads = splitList(workloads)
			if err := cfg.validate(); err != nil {
				return err
			}
			cfg.workloads = inRunOrder(cfg.workloads)
			// The restart mode is there to see a store come back to
			// speed: --timeline follows --reopen unless it is given.
			if cfg.reopen && !cmd.Flags().Changed(timelineFlag) {
				cfg.timeline = true
			}
			if cfg.child {
				cfg.isolate = false
			}
			// Under --isolate the parent only waits: the children profile
			// the stores (childArgs).
			if cfg.cpuProfile != "" && !cfg.isolate && cfg.profilePhase == "" {
				f, err := os.Create(cfg.cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			return run(cmd.Context(), &cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (loads included) to `FILE`, for go tool pprof; with --isolate, one per store to FILE.<store>")
	f.StringVar(&cfg.profilePhase, "cpuprofile-phase", "", "with --cpuprofile, profile only this phase (load, or a workload: a … f) of each store, so that a workload's profile leaves the load out")
	f.StringVar(&stores, "stores", "coopkv-mlfq,badger-v4,bbolt,pebble,badger,bolt", "stores to run, comma-separated: "+strings.Join(storeNames(), ", "))
	f.StringVar(&workloads, "workloads", "a,b,c,d,e,f", "YCSB core workloads to run, comma-separated (they run in the order a,b,c,f,d,e)")
	f.Int64Var(&cfg.records, "records", 100_000, "records loaded into each store (recordcount)")
	f.Int64Var(&cfg.operations, "operations", 200_000, "operations per workload (operationcount)")
	f.IntVar(&cfg.threads, "threads", 8, "client threads (threadcount)")
	f.Int64Var(&cfg.fieldCount, "field-count", 10, "fields per record (fieldcount)")
	f.Int64Var(&cfg.fieldLen, "field-length", 100, "bytes per field (fieldlength)")
	f.StringVar(&cfg.jsonPath, "json", "", "also write the results, settings included, as JSON to this file")
	f.BoolVar(&cfg.markdown, "markdown", false, "print markdown tables (throughput with ratios, p99 per operation, peak memory with ratios, Go heap; with --timeline and --reopen, warm-up and reopen) and the write-amplification lines instead of the plain tables")
	f.StringVar(&cfg.dir, "dir", "", "directory for the stores' temporary directories (default: the system's temporary directory)")
	f.BoolVar(&cfg.isolate, "isolate", true, "run each store in a child process of its own, so that its peak memory (getrusage) is its alone; --isolate=false runs them one after another in this process")
	f.BoolVar(&cfg.reopen, "reopen", false, "restart mode: after the load and before each workload, close the store and open it again on its directory (its in-process caches empty, the OS page cache as it was), and report the time that took; turns --timeline on unless it is given")
	f.BoolVar(&cfg.timeline, timelineFlag, false, "record each phase's operations in each whole second (timeline_ops_per_sec in the JSON) and report the rate in the first 5 s, the steady rate (the median second of the phase's second half) and their ratio (default: on with --reopen)")
	f.BoolVar(&cfg.child, childFlag, false, "run as a store's child process under --isolate: results only to --json")
	if err := f.MarkHidden(childFlag); err != nil {
		panic(err) // the flag was just defined
	}
	f.StringArrayVarP(&cfg.props, "prop", "p", nil, "extra go-ycsb property name=value for every store, e.g. -p coopkv.rowcache=-1 (repeatable)")
	return cmd
}

// splitList splits a comma-separated flag, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, strings.ToLower(f))
		}
	}
	return out
}

// inRunOrder returns ws sorted into runOrder.
func inRunOrder(ws []string) []string {
	var out []string
	for _, w := range runOrder {
		if slices.Contains(ws, w) {
			out = append(out, w)
		}
	}
	return out
}

// validate reports every problem at once.
func (c *config) validate() error {
	var errs []error
	if len(c.stores) == 0 {
		errs = append(errs, errors.New("--stores names no store"))
	}
	for i, s := range c.stores {
		if _, ok := knownStores[s]; !ok {
			errs = append(errs, fmt.Errorf("unknown store %q (want %s)", s, strings.Join(storeNames(), ", ")))
		}
		if slices.Contains(c.stores[:i], s) {
			errs = append(errs, fmt.Errorf("store %q named twice", s))
		}
	}
	if len(c.workloads) == 0 {
		errs = append(errs, errors.New("--workloads names no workload"))
	}
	for i, w := range c.workloads {
		if !slices.Contains(runOrder, w) {
			errs = append(errs, fmt.Errorf("unknown workload %q (want a … f)", w))
		}
		if slices.Contains(c.workloads[:i], w) {
			errs = append(errs, fmt.Errorf("workload %q named twice", w))
		}
	}
	if c.threads < 1 {
		errs = append(errs, fmt.Errorf("--threads %d: want at least 1", c.threads))
	}
	// go-ycsb's client exits the process when a thread would get no
	// operation, so these are checked here.
	if c.records < int64(max(c.threads, 1)) {
		errs = append(errs, fmt.Errorf("--records %d: want at least --threads (%d)", c.records, c.threads))
	}
	if c.operations < int64(max(c.threads, 1)) {
		errs = append(errs, fmt.Errorf("--operations %d: want at least --threads (%d)", c.operations, c.threads))
	}
	if c.fieldCount < 1 {
		errs = append(errs, fmt.Errorf("--field-count %d: want at least 1", c.fieldCount))
	}
	if c.fieldLen < 1 {
		errs = append(errs, fmt.Errorf("--field-length %d: want at least 1", c.fieldLen))
	}
	if c.child && c.jsonPath == "" {
		errs = append(errs, fmt.Errorf("--%s: want --json", childFlag))
	}
	for _, p := range c.props {
		if name, _, ok := strings.Cut(p, "="); !ok || strings.TrimSpace(name) == "" {
			errs = append(errs, fmt.Errorf("--prop %q: want name=value", p))
		}
	}
	if c.reopen && dropsData(c.props) {
		errs = append(errs, errors.New("--reopen: -p dropdata would remove each store's data before it opens again"))
	}
	return errors.Join(errs...)
}

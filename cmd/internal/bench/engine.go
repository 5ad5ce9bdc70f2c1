package bench

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/coopkv/coopkv/kv"
)

// Stores opens the stores a run measures: one for the load, then one per
// scheduler, each closed before the next is opened. The binary gives it:
// kvbench's opens an embedded *kv.DB in one directory with each
// scheduler; another may open a kv.Store of its own, whose schedulers
// are whatever it makes of the names.
//
// What only some stores have is asked of the store itself: resource
// groups (ResourceGroups, as *kv.DB has them) for the groups workloads,
// Flush for the end of the load. A store without them runs the other
// workloads.
type Stores interface {
	// Open opens the store with read scheduler scheduler, or, for load,
	// the store the load writes (scheduler is then "").
	Open(scheduler string, load bool) (kv.Store, error)
	// Close closes a store Open returned.
	Close(st kv.Store) error
	// Describe says where the stores are and how they read, for the run's
	// first line: "in /tmp/kvbench-1, 2 workers".
	Describe() string
	// Workers is the read pool's size, for the report; 0 if it has none.
	Workers() int
}

// StoreSetup is how a run's stores depart from the store's defaults where
// a reader of the results must know it to read them. A Stores with a
// method StoreSetup() StoreSetup says so, and Run records it in the report
// (a line above the table, and the JSON); one without has the defaults.
// Zero fields are defaults.
type StoreSetup struct {
	// DiskLatency is what a simulated disk added to every table read
	// (kvbench --disk-latency): the figures are a simulated disk's.
	DiskLatency time.Duration
	// CacheSize is the block cache in bytes (kvbench --cache-size).
	CacheSize int64
}

// setupStores is a Stores that tells its StoreSetup.
type setupStores interface{ StoreSetup() StoreSetup }

// Run is a whole run of w: load the store, run w's phases on each of its
// schedulers' stores, then print the table and w's summary to out and
// write the JSON and the plot if cfg asks. Progress and notes go to
// errOut; with --json - the JSON goes to out and the table to errOut.
// cfg and w's flags must have been validated.
//
// If ctx ends first, the phase running stops there and Run reports what
// was measured: the phases done, and the stopped phase's figures so far,
// marked interrupted. It then returns ErrInterrupted, wrapping ctx's
// cause.
func Run(ctx context.Context, cfg *Config, w Workload, stores Stores, out, errOut io.Writer) (err error) {
	r := &runner{cfg: cfg, w: w, stores: stores, prog: newProgress(errOut, cfg.Quiet),
		byRun: make(map[[2]string][]Result)}
	r.prog.printf("kvbench: %d keys of %d bytes %s, seed %d", cfg.Keys, cfg.ValueSize, stores.Describe(), cfg.Seed)
	if cfg.TracePath != "" {
		stopTrace, err := startTrace(cfg.TracePath)
		if err != nil {
			return err
		}
		defer func() {
			if terr := stopTrace(); err == nil {
				err = terr
			}
		}()
	}

	var stop interruption
	if err := r.measure(ctx); err != nil && !errors.As(err, &stop) {
		return err
	}
	var sections []string
	for _, p := range w.Phases() {
		if !slices.Contains(sections, p.Section) {
			sections = append(sections, p.Section)
		}
	}
	rep := &Report{
		Workload:    strings.Join(sections, ","),
		Keys:        cfg.Keys,
		ValueSize:   cfg.ValueSize,
		Workers:     stores.Workers(),
		DurationS:   cfg.Duration.Seconds(),
		Results:     []Result{},
		Interrupted: stop.phase != "",
	}
	if s, ok := stores.(setupStores); ok {
		setup := s.StoreSetup()
		rep.SimulatedDiskLatencyUs = micros(setup.DiskLatency)
		rep.CacheSizeBytes = setup.CacheSize
	}
	for _, section := range sections {
		for _, s := range w.Schedulers(cfg.Schedulers) {
			rep.Results = append(rep.Results, r.byRun[[2]string{section, s}]...)
		}
	}
	if err := writeResults(cfg, w, rep, stop, context.Cause(ctx), out, errOut); err != nil {
		return err
	}
	if rep.Interrupted {
		return fmt.Errorf("%w by %w during %s", ErrInterrupted, context.Cause(ctx), stop.phase)
	}
	return nil
}

// runner is one Run's state.
type runner struct {
	cfg    *Config
	w      Workload
	stores Stores
	prog   *progress
	keys   *keySpace
	byRun  map[[2]string][]Result // by (section, scheduler), in the order measured
}

// measure loads the store and runs the workload on each of its
// schedulers, leaving the results in r.byRun. It returns an interruption
// if ctx ends first.
func (r *runner) measure(ctx context.Context) error {
	if err := load(ctx, r.stores, r.cfg, r.w.Rows(), r.prog); err != nil {
		return err
	}
	r.keys = newKeySpace(r.cfg.Keys)
	for _, sched := range r.w.Schedulers(r.cfg.Schedulers) {
		if err := r.runStore(ctx, sched); err != nil {
			return err
		}
	}
	return nil
}

// runStore opens the store with scheduler sched, sets it up for the
// workload and runs each of its phases there: a warm-up for --warmup (if
// any), a measured phase for --duration, whose results it records. The
// workload's Check judges every phase. It returns an interruption if ctx
// ends first, after recording the figures of the measured phase it
// stopped, if any.
func (r *runner) runStore(ctx context.Context, sched string) (err error) {
	st, err := r.stores.Open(sched, false)
	if err != nil {
		return fmt.Errorf("%s: %w", sched, err)
	}
	defer func() {
		if cerr := r.stores.Close(st); err == nil && cerr != nil {
			err = fmt.Errorf("%s: %w", sched, cerr)
		}
	}()
	if err := r.w.Setup(st); err != nil {
		return fmt.Errorf("%s %s: %w", sched, r.w.Name(), err)
	}
	cfg := r.cfg
	for _, p := range r.w.Phases() {
		label := sched + " " + p.Label
		var groups groupStore
		if p.RU {
			var ok bool
			if groups, ok = st.(groupStore); !ok {
				return fmt.Errorf("%s: the store has no resource groups to measure", label)
			}
		}
		seed := newRand(cfg.Seed, nameStream(p.Section), p.Stream).Uint64()
		e := &env{db: st, keys: r.keys, cfg: cfg, seed: seed}
		if p.Before != nil {
			if err := p.Before(st); err != nil {
				return fmt.Errorf("%s: %w", label, err)
			}
		}
		if p.Warmup {
			if cfg.Warmup > 0 {
				stop := r.prog.timed(label+" warm-up", cfg.Warmup)
				m := runPhase(ctx, groups, p.Clients(e), cfg.Warmup)
				stop()
				if err := r.w.Check(m); err != nil {
					return fmt.Errorf("%s warm-up: %w", label, err)
				}
			}
			if ctx.Err() != nil {
				return interruption{phase: label + " warm-up"}
			}
			continue
		}
		stop := r.prog.timed(label, cfg.Duration)
		m := runPhase(ctx, groups, p.Clients(e), cfg.Duration)
		stop()
		m.sched = sched
		m.workload = p.Workload
		if m.workload == "" {
			m.workload = p.Section
		}
		if p.After != nil {
			p.After(st, m)
		}
		var results []Result
		if p.Results != nil {
			results = p.Results(m)
		} else {
			rec := m.merged()
			for _, c := range p.Classes {
				results = append(results, newResult(m.workload, sched, c, "", rec.summarize(c, m.elapsed)))
			}
		}
		for i := range results {
			results[i].Interrupted = m.interrupted
			results[i].OverrunMs = float64(m.overrun.Microseconds()) / 1000
		}
		if m.overrun >= overrunNote {
			r.prog.printf("%s: the clients stopped %v after the phase's end", label, m.overrun.Round(time.Millisecond))
		}
		key := [2]string{p.Section, sched}
		r.byRun[key] = append(r.byRun[key], results...)
		if err := r.w.Check(m); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		if ctx.Err() != nil {
			return interruption{phase: label, elapsed: m.elapsed, of: cfg.Duration}
		}
	}
	return nil
}

// overrunNote is the overrun of a phase (Measured.overrun) worth a note:
// more than an operation's ordinary tail.
const overrunNote = 250 * time.Millisecond

// writeResults prints rep — the table, the workload's lines under it,
// and, if the run was interrupted, where and by what (cause) — and writes
// the JSON and the plot if asked.
func writeResults(cfg *Config, w Workload, rep *Report, stop interruption, cause error, out, errOut io.Writer) error {
	tableOut := out
	if cfg.JSONPath == JSONStdout {
		tableOut = errOut // stdout is the JSON's
	}
	if err := writeTable(tableOut, rep); err != nil {
		return err
	}
	if err := w.Summarize(tableOut, rep); err != nil {
		return err
	}
	if rep.Interrupted {
		if err := writeInterruption(tableOut, stop, cause); err != nil {
			return err
		}
	}
	switch cfg.JSONPath {
	case "":
	case JSONStdout:
		if err := encodeJSON(out, rep); err != nil {
			return fmt.Errorf("--json -: %w", err)
		}
	default:
		if err := writeJSON(cfg.JSONPath, rep); err != nil {
			return err
		}
	}
	if cfg.PlotPath != "" {
		if rep.Interrupted && len(plotPanels(rep)) == 0 {
			fmt.Fprintf(errOut, "kvbench: --plot %s: nothing measured, no plot written\n", cfg.PlotPath)
		} else if err := writePlot(cfg.PlotPath, rep); err != nil {
			return err
		}
	}
	return nil
}

// nameStream is the random stream of the section called name.
func nameStream(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// startTrace starts a runtime trace into a new file at path, and returns
// what stops it and closes the file.
func startTrace(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		return nil, errors.Join(fmt.Errorf("--trace: %w", err), f.Close())
	}
	return func() error {
		trace.Stop()
		return f.Close()
	}, nil
}

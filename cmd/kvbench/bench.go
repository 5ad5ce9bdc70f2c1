package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

// Random streams of the phases: the same workload gets the same choices on
// every scheduler, and its warm-up different ones from its measured phase.
const (
	streamWarmup  = 1
	streamMeasure = 2
	// A groups workload's phase with one group alone, before the others.
	streamAloneWarmup  = 3
	streamAloneMeasure = 4
	// A workload's quiet phase (workload.quiet), after its warm-up.
	streamQuietMeasure = 5
)

// runBench is a whole kvbench run: make and load the store, run each
// workload on each scheduler (reopening the store for each), then print
// the table to out and write the JSON and the plot if asked. Progress,
// notes and the stores' log go to errOut; with --json - the JSON goes to
// out and the table to errOut.
//
// If ctx ends first, the phase running stops there and runBench reports
// what was measured: the phases done, and the stopped phase's figures so
// far, marked interrupted. It then returns errInterrupted, wrapping ctx's
// cause.
func runBench(ctx context.Context, cfg *config, out, errOut io.Writer) (err error) {
	errOut = &cli.SyncWriter{W: errOut}
	st := &stores{cfg: cfg, log: errOut}
	if cfg.admin != "" {
		// Before the load, so that a busy port fails the run at once.
		if st.admin, err = listenAdmin(cfg.admin, errOut); err != nil {
			return err
		}
		defer func() {
			if cerr := st.admin.close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
		fmt.Fprintf(errOut, "admin endpoint on http://%s (kvctl --addr %[1]s)\n", st.admin.addr())
	}
	prog := newProgress(errOut, cfg.quiet)
	if st.dir = cfg.dir; st.dir == "" {
		if st.dir, err = os.MkdirTemp("", "kvbench-"); err != nil {
			return err
		}
		defer func() {
			if rerr := os.RemoveAll(st.dir); err == nil && rerr != nil {
				err = rerr
			}
		}()
	} else if err := os.MkdirAll(st.dir, 0o755); err != nil {
		return err
	}
	prog.printf("kvbench: %d keys of %d bytes in %s, %d workers, seed %d",
		cfg.keys, cfg.valueSize, st.dir, cfg.resolvedWorkers(), cfg.seed)

	byRun := make(map[[2]string][]result) // by (workload, scheduler)
	var stop interruption
	if err := measure(ctx, st, cfg, prog, byRun); err != nil && !errors.As(err, &stop) {
		return err
	}
	rep := &report{
		Workload:    strings.Join(cfg.workloads, ","),
		Keys:        cfg.keys,
		ValueSize:   cfg.valueSize,
		Workers:     cfg.resolvedWorkers(),
		DurationS:   cfg.duration.Seconds(),
		Results:     []result{},
		Interrupted: stop.phase != "",
	}
	for _, name := range cfg.workloads {
		if w, _ := lookupWorkload(name); w.groups != nil {
			rep.Results = append(rep.Results, byRun[[2]string{name, groupsScheduler}]...)
			continue
		}
		for _, s := range cfg.schedulers {
			rep.Results = append(rep.Results, byRun[[2]string{name, s}]...)
		}
	}
	if err := writeResults(cfg, rep, stop, context.Cause(ctx), out, errOut); err != nil {
		return err
	}
	if rep.Interrupted {
		return fmt.Errorf("%w by %w during %s", errInterrupted, context.Cause(ctx), stop.phase)
	}
	return nil
}

// measure loads the store and runs the workloads, leaving their results in
// byRun. It returns an interruption if ctx ends first.
func measure(ctx context.Context, st *stores, cfg *config, prog *progress, byRun map[[2]string][]result) error {
	if err := load(ctx, st, cfg, prog); err != nil {
		return err
	}
	keys := newKeySpace(cfg.keys)
	var plain []*workload
	for _, name := range cfg.workloads {
		if w, _ := lookupWorkload(name); w.groups == nil { // validated
			plain = append(plain, w)
		}
	}
	if len(plain) > 0 {
		for _, sched := range cfg.schedulers {
			if err := runScheduler(ctx, st, cfg, sched, plain, keys, prog, byRun); err != nil {
				return err
			}
		}
	}
	for _, name := range cfg.workloads {
		if w, _ := lookupWorkload(name); w.groups != nil {
			rs, err := runGroups(ctx, st, cfg, w, keys, prog)
			byRun[[2]string{name, groupsScheduler}] = rs
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// writeResults prints rep — the table, the lines under it, and, if the
// run was interrupted, where and by what (cause) — and writes the JSON and
// the plot if asked.
func writeResults(cfg *config, rep *report, stop interruption, cause error, out, errOut io.Writer) error {
	tableOut := out
	if cfg.jsonPath == jsonStdout {
		tableOut = errOut // stdout is the JSON's
	}
	if err := writeTable(tableOut, rep); err != nil {
		return err
	}
	if err := writeComparisons(tableOut, rep); err != nil {
		return err
	}
	if err := writeNoisySummaries(tableOut, cfg, rep); err != nil {
		return err
	}
	if err := writeGroupSummaries(tableOut, rep); err != nil {
		return err
	}
	if rep.Interrupted {
		if err := writeInterruption(tableOut, stop, cause); err != nil {
			return err
		}
	}
	switch cfg.jsonPath {
	case "":
	case jsonStdout:
		if err := encodeJSON(out, rep); err != nil {
			return fmt.Errorf("--json -: %w", err)
		}
	default:
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			return err
		}
	}
	if cfg.plotPath != "" {
		if rep.Interrupted && len(plotPanels(rep)) == 0 {
			fmt.Fprintf(errOut, "kvbench: --plot %s: nothing measured, no plot written\n", cfg.plotPath)
		} else if err := writePlot(cfg.plotPath, rep); err != nil {
			return err
		}
	}
	return nil
}

// runScheduler opens the store with scheduler sched and runs each of
// workloads on it: a warm-up, then, for a workload with a quiet phase
// (unless --no-quiet), the quiet phase, measured, then the measured
// phase. It returns an interruption if ctx ends first, after recording the
// figures of the measured phase it stopped, if any.
//
// The quiet phase follows the warm-up directly, so that it finds the store
// as warm as the measured phase does; it runs for --duration, as the
// measured phase does, so that the two Get p99s rest on as many Gets.
func runScheduler(ctx context.Context, st *stores, cfg *config, sched string, workloads []*workload,
	keys *keySpace, prog *progress, byRun map[[2]string][]result) (err error) {
	db, err := st.open(st.options(sched))
	if err != nil {
		return fmt.Errorf("%s: %w", sched, err)
	}
	defer func() {
		if cerr := st.close(db); err == nil && cerr != nil {
			err = fmt.Errorf("%s: %w", sched, cerr)
		}
	}()
	for _, w := range workloads {
		name := w.name
		label := sched + " " + name
		stream := func(phase uint64) uint64 { return newRand(cfg.seed, nameStream(name), phase).Uint64() }
		if cfg.warmup > 0 {
			stop := prog.timed(label+" warm-up", cfg.warmup)
			wph := runPhase(ctx, db, w.clients(&env{db: db, cfg: cfg, keys: keys, seed: stream(streamWarmup)}), cfg.warmup)
			stop()
			// A workload that checks the store (soak) fails the run on a
			// mismatch, in the warm-up too.
			if err := wph.failure(); err != nil {
				return fmt.Errorf("%s warm-up: %w", label, err)
			}
		}
		if ctx.Err() != nil {
			return interruption{phase: label + " warm-up"}
		}
		// measured runs one measured phase of clients built by build and
		// records its classes as results of workload as.
		measured := func(label, as string, classes []class, build func(*env) []client, streamPhase uint64) error {
			stop := prog.timed(label, cfg.duration)
			ph := runPhase(ctx, db, build(&env{db: db, cfg: cfg, keys: keys, seed: stream(streamPhase)}), cfg.duration)
			stop()
			rec := ph.merged()
			for _, c := range classes {
				r := newResult(as, sched, c, "", rec.summarize(c, ph.elapsed))
				r.Interrupted = ph.interrupted
				byRun[[2]string{name, sched}] = append(byRun[[2]string{name, sched}], r)
			}
			if err := ph.failure(); err != nil {
				return fmt.Errorf("%s: %w", label, err)
			}
			if ctx.Err() != nil {
				return interruption{phase: label, elapsed: ph.elapsed, of: cfg.duration}
			}
			return nil
		}
		if w.quiet != nil && !cfg.noQuiet {
			if err := measured(label+" quiet", name+quietSuffix, []class{classGet}, w.quiet, streamQuietMeasure); err != nil {
				return err
			}
		}
		if err := measured(label, name, w.classes, w.clients, streamMeasure); err != nil {
			return err
		}
	}
	return nil
}

// nameStream is the random stream of the workload called name.
func nameStream(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

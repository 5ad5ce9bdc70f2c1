package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"

	"github.com/coopkv/coopkv/kv"
)

// Random streams of the phases: the same workload gets the same choices on
// every scheduler, and its warm-up different ones from its measured phase.
const (
	streamWarmup  = 1
	streamMeasure = 2
	// A groups workload's phase with one group alone, before the others.
	streamAloneWarmup  = 3
	streamAloneMeasure = 4
)

// runBench is a whole kvbench run: make and load the store, run each
// workload on each scheduler (reopening the store for each), then print
// the table and write the JSON and the plot if asked.
func runBench(ctx context.Context, cfg *config, out io.Writer) (err error) {
	prog := newProgress(out, cfg.quiet)
	dir := cfg.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kvbench-"); err != nil {
			return err
		}
		defer func() {
			if rerr := os.RemoveAll(dir); err == nil && rerr != nil {
				err = rerr
			}
		}()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	prog.printf("kvbench: %d keys of %d bytes in %s, %d workers, seed %d",
		cfg.keys, cfg.valueSize, dir, cfg.resolvedWorkers(), cfg.seed)

	if err := load(ctx, dir, cfg, prog); err != nil {
		return err
	}
	keys := newKeySpace(cfg.keys)
	byRun := make(map[[2]string][]result) // by (workload, scheduler)
	var plain []*workload
	for _, name := range cfg.workloads {
		if w, _ := lookupWorkload(name); w.groups == nil { // validated
			plain = append(plain, w)
		}
	}
	if len(plain) > 0 {
		for _, sched := range cfg.schedulers {
			if err := runScheduler(ctx, dir, cfg, sched, plain, keys, prog, byRun); err != nil {
				return err
			}
		}
	}
	for _, name := range cfg.workloads {
		if w, _ := lookupWorkload(name); w.groups != nil {
			rs, err := runGroups(ctx, dir, cfg, w, keys, prog)
			if err != nil {
				return err
			}
			byRun[[2]string{name, groupsScheduler}] = rs
		}
	}

	rep := &report{
		Workload:  strings.Join(cfg.workloads, ","),
		Keys:      cfg.keys,
		ValueSize: cfg.valueSize,
		Workers:   cfg.resolvedWorkers(),
		DurationS: cfg.duration.Seconds(),
		Results:   []result{},
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
	if err := writeTable(out, rep); err != nil {
		return err
	}
	if err := writeComparisons(out, rep); err != nil {
		return err
	}
	if err := writeGroupSummaries(out, rep); err != nil {
		return err
	}
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			return err
		}
	}
	if cfg.plotPath != "" {
		if err := writePlot(cfg.plotPath, rep); err != nil {
			return err
		}
	}
	return nil
}

// runScheduler opens the store with scheduler sched and runs each of
// workloads on it: a warm-up, then the measured phase.
func runScheduler(ctx context.Context, dir string, cfg *config, sched string, workloads []*workload,
	keys *keySpace, prog *progress, byRun map[[2]string][]result) (err error) {
	db, err := kv.Open(dir, storeOptions(cfg, sched))
	if err != nil {
		return fmt.Errorf("%s: %w", sched, err)
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: %w", sched, cerr)
		}
	}()
	for _, w := range workloads {
		name := w.name
		stream := func(phase uint64) uint64 { return newRand(cfg.seed, nameStream(name), phase).Uint64() }
		if cfg.warmup > 0 {
			stop := prog.timed(sched+" "+name+" warm-up", cfg.warmup)
			runPhase(ctx, db, w.clients(&env{db: db, cfg: cfg, keys: keys, seed: stream(streamWarmup)}), cfg.warmup)
			stop()
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		stop := prog.timed(sched+" "+name, cfg.duration)
		ph := runPhase(ctx, db, w.clients(&env{db: db, cfg: cfg, keys: keys, seed: stream(streamMeasure)}), cfg.duration)
		stop()
		if err := ctx.Err(); err != nil {
			return err
		}
		rec := ph.merged()
		for _, c := range w.classes {
			byRun[[2]string{name, sched}] = append(byRun[[2]string{name, sched}],
				newResult(name, sched, c, "", rec.summarize(c, ph.elapsed)))
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

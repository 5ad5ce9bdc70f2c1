package main

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/client"
	"github.com/pingcap/go-ycsb/pkg/measurement"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/coopkv/coopkv/kv"

	// go-ycsb's core workload registers itself.
	_ "github.com/pingcap/go-ycsb/pkg/workload"
)

// workloadFiles are YCSB's standard core workload definitions.
//
//go:embed workloads/workload[a-f]
var workloadFiles embed.FS

// run runs cfg's workloads on each of its stores, one store at a time,
// writes the results to out and progress to errOut.
//
// go-ycsb's measurements are process-wide: run must not run twice at once
// in one process.
func run(ctx context.Context, cfg *config, out, errOut io.Writer) error {
	res := &results{
		Tool:       "go-ycsb " + goYCSBVersion(),
		GoVersion:  runtime.Version(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Started:    time.Now().UTC().Truncate(time.Second),
		Records:    cfg.records,
		Operations: cfg.operations,
		Threads:    cfg.threads,
		FieldCount: cfg.fieldCount,
		FieldLen:   cfg.fieldLen,
		Workloads:  cfg.workloads,
		Isolated:   cfg.isolate,
		Reopen:     cfg.reopen,
		Timeline:   cfg.timeline,
	}
	if !cfg.child { // the parent said it
		fmt.Fprintf(errOut, "%s: %d records of %d × %d B, %d operations per workload, %d threads, workloads %s\n",
			res.Tool, cfg.records, cfg.fieldCount, cfg.fieldLen, cfg.operations, cfg.threads, strings.Join(cfg.workloads, ","))
	}
	for _, name := range cfg.stores {
		var (
			info   storeInfo
			phases []phaseStats
			err    error
		)
		if cfg.isolate {
			info, phases, err = runIsolated(ctx, cfg, name, errOut)
		} else {
			// Give back what the Go runtime holds of the store before, so
			// that this one starts low (StartRSS says how low: C's
			// allocator keeps some, which --isolate avoids).
			freeMemory()
			info, phases, err = runStore(ctx, cfg, name, errOut)
		}
		if err == nil && !cfg.child { // the parent sums up, with getrusage's peak
			storeSummary(errOut, &info)
		}
		res.Stores = append(res.Stores, info)
		res.Phases = append(res.Phases, phases...)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, res); err != nil {
			return err
		}
		if cfg.child {
			return nil
		}
		fmt.Fprintf(errOut, "wrote %s\n", cfg.jsonPath)
	}
	if cfg.markdown {
		return writeMarkdown(out, res)
	}
	return writePlain(out, res)
}

// runStore loads store name into a fresh temporary directory and runs the
// workloads on it, closing and opening it again before each with
// cfg.reopen. The directory is removed at the end.
func runStore(ctx context.Context, cfg *config, name string, errOut io.Writer) (info storeInfo, phases []phaseStats, err error) {
	s := knownStores[name]
	dir, err := os.MkdirTemp(cfg.dir, "ycsb-"+name+"-")
	if err != nil {
		return storeInfo{Name: name}, nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	sp := storeProps(s, dir, cfg.props)
	info = storeInfo{Name: name, Driver: s.driver, About: s.about, Properties: sp}
	start, _ := readRSS()
	info.Memory.StartRSS = start.rss
	// p opens the store, and opens it again with cfg.reopen.
	p, err := phaseProps(cfg, "a", false, sp, filepath.Join(dir, "measurement-load.json"))
	if err != nil {
		return info, nil, err
	}
	db, err := openStore(s, p)
	if err != nil {
		return info, nil, err
	}
	// db is the store open now: nil after a reopen that failed.
	defer func() {
		if db != nil {
			err = errors.Join(err, db.Close())
		}
	}()
	if kdb, ok := db.(kvStore); ok {
		info.Sizes = sizesOf(kdb.KV().Stats())
		z := info.Sizes
		fmt.Fprintf(errOut, "[%s] sizes in force: block cache %s (memtables included), memtable %s, row cache %s\n",
			name, mib(z.BlockCacheCapacity), mib(z.MemTableSize), mib(z.RowCacheCapacity))
	}
	// The store's figures, from what its phases found, whichever way
	// runStore returns.
	defer func() {
		info.Memory.PeakSource = sourcePhases
		for _, ps := range phases {
			info.Memory.PeakRSS = max(info.Memory.PeakRSS, ps.Memory.PeakRSS)
		}
		if kdb, ok := db.(kvStore); ok { // since the last open, with cfg.reopen
			info.Writes = writesSinceOpen(kdb.KV().Stats())
		}
	}()

	fmt.Fprintf(errOut, "[%s] load: %d records …\n", name, cfg.records)
	ps, err := profiled(cfg, loadPhase, func() (phaseStats, error) {
		return runPhase(ctx, p, db, name, loadPhase, cfg.records, cfg.timeline)
	})
	if err != nil {
		return info, phases, err
	}
	progress(errOut, &ps)
	phases = append(phases, ps)
	for _, w := range cfg.workloads {
		wp, err := phaseProps(cfg, w, true, sp, filepath.Join(dir, "measurement-"+w+".json"))
		if err != nil {
			return info, phases, err
		}
		var re *reopenStats
		if cfg.reopen {
			if db, re, err = reopenStore(s, p, db); err != nil {
				return info, phases, fmt.Errorf("before workload %s: %w", w, err)
			}
			reopenProgress(errOut, name, w, re)
		}
		fmt.Fprintf(errOut, "[%s] workload %s: %d operations …\n", name, w, cfg.operations)
		ps, err := profiled(cfg, w, func() (phaseStats, error) {
			return runPhase(ctx, wp, db, name, w, cfg.operations, cfg.timeline)
		})
		if err != nil {
			return info, phases, err
		}
		ps.Reopen = re
		progress(errOut, &ps)
		phases = append(phases, ps)
	}
	return info, phases, nil
}

// profiled runs phase, under a CPU profile to cfg.cpuProfile when
// --cpuprofile-phase names it. A second store in the same process
// (--isolate=false) overwrites the first's profile.
func profiled(cfg *config, name string, phase func() (phaseStats, error)) (phaseStats, error) {
	if cfg.cpuProfile == "" || cfg.profilePhase != name {
		return phase()
	}
	f, err := os.Create(cfg.cpuProfile)
	if err != nil {
		return phaseStats{}, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return phaseStats{}, errors.Join(err, f.Close())
	}
	ps, err := phase()
	pprof.StopCPUProfile()
	return ps, errors.Join(err, f.Close())
}

// runPhase runs one phase with go-ycsb's client (load when p's
// dotransactions is false, the workload otherwise) and reads go-ycsb's
// measurements of it; with timeline, it records the phase's operations
// per second too.
func runPhase(ctx context.Context, p *properties.Properties, db ycsb.DB, store, name string, ops int64, timeline bool) (phaseStats, error) {
	wname := p.GetString(prop.Workload, "core")
	wc := ycsb.GetWorkloadCreator(wname)
	if wc == nil {
		return phaseStats{}, fmt.Errorf("go-ycsb has no workload %q", wname)
	}
	wl, err := wc.Create(p)
	if err != nil {
		return phaseStats{}, fmt.Errorf("workload %s: %w", name, err)
	}
	defer wl.Close()

	// A fresh, process-wide measurement per phase; DbWrapper times every
	// call as go-ycsb's own run and load commands do.
	measurement.InitMeasure(p)
	var done atomic.Int64
	if timeline {
		wl = countingWorkload{Workload: wl, done: &done}
	}
	// The runner sets no batch size, so the recorder need not pass
	// go-ycsb's batch interface on.
	rec := &errorRecorder{DB: db}
	c := client.NewClient(p, wl, client.DbWrapper{DB: rec})
	kdb, isKV := db.(kvStore)
	var before kv.Stats
	if isKV {
		before = kdb.KV().Stats()
	}
	tdb, isTxn := db.(txnStore)
	var retries *int64
	if isTxn {
		n := tdb.TxnRetries()
		retries = &n
	}
	mem := startMemSampler(sampleEvery)
	start := time.Now()
	var sampler *timelineSampler
	if timeline {
		sampler = startTimeline(&done, start)
	}
	cpu0 := processCPU()
	c.Run(ctx)
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	var (
		tl        phaseTimeline
		perSecond *[]float64
	)
	if timeline {
		tl = sampler.end(elapsed)
		perSecond = &tl.perSecond
	}
	memory := mem.end()
	var (
		caches *cacheStats
		writes *writeStats
	)
	if isKV {
		after := kdb.KV().Stats()
		caches = cacheDelta(before, after)
		writes = writeDelta(before, after)
	}
	if isTxn {
		*retries = tdb.TxnRetries() - *retries
	}
	if err := context.Cause(ctx); err != nil {
		return phaseStats{}, fmt.Errorf("workload %s: %w", name, err)
	}
	measurement.Output() // to p's measurement.output_file, as JSON
	ops2, errs, err := readMeasurements(p.GetString(prop.MeasurementRawOutputFile, ""), elapsed)
	if err != nil {
		return phaseStats{}, fmt.Errorf("workload %s: %w", name, err)
	}
	return phaseStats{
		Store:      store,
		Workload:   name,
		Operations: ops,
		Elapsed:    elapsed.Seconds(),
		OpsPerSec:  float64(ops) / elapsed.Seconds(),
		CPUPerOp:   float64(cpu.Nanoseconds()) / 1e3 / float64(max(ops, 1)),
		Errors:     errs,
		FirstError: rec.firstError(),
		Ops:        ops2,
		Memory:     memory,
		Caches:     caches,
		Writes:     writes,
		TxnRetries: retries,
		Timeline:   perSecond,
		TailOps:    tl.tail,
		First5s:    tl.first5s,
		Steady:     tl.steady,
	}, nil
}

// phaseProps are the go-ycsb properties of one phase: YCSB's definition of
// workload w, the run's sizes and thread count over it, then the store's
// properties. Measurements go to measureFile, as JSON.
func phaseProps(cfg *config, w string, transactions bool, storeProps map[string]string, measureFile string) (*properties.Properties, error) {
	def, err := workloadFiles.ReadFile("workloads/workload" + w)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", w, err)
	}
	p, err := properties.Load(def, properties.UTF8)
	if err != nil {
		return nil, fmt.Errorf("workload %s: %w", w, err)
	}
	set := map[string]string{
		prop.RecordCount:    strconv.FormatInt(cfg.records, 10),
		prop.OperationCount: strconv.FormatInt(cfg.operations, 10),
		prop.ThreadCount:    strconv.Itoa(cfg.threads),
		prop.FieldCount:     strconv.FormatInt(cfg.fieldCount, 10),
		prop.FieldLength:    strconv.FormatInt(cfg.fieldLen, 10),
		prop.DoTransactions: strconv.FormatBool(transactions),
		prop.Command:        map[bool]string{false: "load", true: "run"}[transactions],
		// go-ycsb's histograms, summarised as JSON into a file that
		// readMeasurements reads.
		prop.MeasurementType:          "histogram",
		prop.OutputStyle:              "json",
		prop.MeasurementRawOutputFile: measureFile,
		// go-ycsb's client prints the running summary to stdout every
		// interval seconds; a century keeps stdout for the results.
		prop.LogInterval: strconv.Itoa(100 * 365 * 24 * 3600),
		prop.Silence:     "true",
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if _, _, err := p.Set(k, set[k]); err != nil {
			return nil, fmt.Errorf("workload %s: %s: %w", w, k, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(storeProps)) {
		if _, _, err := p.Set(k, storeProps[k]); err != nil {
			return nil, fmt.Errorf("workload %s: %s: %w", w, k, err)
		}
	}
	return p, nil
}

// cutProp splits name=value.
func cutProp(s string) (name, value string, ok bool) {
	name, value, ok = strings.Cut(s, "=")
	return strings.TrimSpace(name), strings.TrimSpace(value), ok
}

// goYCSBVersion is the version of go-ycsb built in.
func goYCSBVersion() string { return depVersion("github.com/pingcap/go-ycsb") }

// depVersion is the version of the module path built in.
func depVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}

func writeJSON(path string, res *results) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("json: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("json: %w", err)
	}
	return nil
}

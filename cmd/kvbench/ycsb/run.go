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
	"slices"
	"strconv"
	"strings"
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

// loadPhase is the name of the load in results: the inserts of the
// records, before the workloads.
const loadPhase = "load"

// results is everything a run found, and how it ran: the JSON report.
type results struct {
	Tool       string       `json:"tool"` // go-ycsb and its version
	GoVersion  string       `json:"go_version"`
	GOOS       string       `json:"goos"`
	GOARCH     string       `json:"goarch"`
	NumCPU     int          `json:"num_cpu"`
	GOMAXPROCS int          `json:"gomaxprocs"`
	Started    time.Time    `json:"started"`
	Records    int64        `json:"records"`
	Operations int64        `json:"operations"`
	Threads    int          `json:"threads"`
	FieldCount int64        `json:"field_count"`
	FieldLen   int64        `json:"field_length"`
	Workloads  []string     `json:"workloads"` // in run order
	Stores     []storeInfo  `json:"stores"`
	Phases     []phaseStats `json:"phases"` // per store: the load, then the workloads in run order
}

// storeInfo is a store as it was run.
type storeInfo struct {
	Name       string            `json:"name"`
	Driver     string            `json:"driver"` // the go-ycsb binding
	About      string            `json:"about"`
	Properties map[string]string `json:"properties"` // the store's own, as opened (temporary paths included)
}

// phaseStats is one store's load or one workload on it.
type phaseStats struct {
	Store      string    `json:"store"`
	Workload   string    `json:"workload"`   // "load" or a … f
	Operations int64     `json:"operations"` // records loaded, or operationcount; a read-modify-write is one
	Elapsed    float64   `json:"elapsed_sec"`
	OpsPerSec  float64   `json:"ops_per_sec"` // Operations / Elapsed: YCSB's overall throughput
	Errors     int64     `json:"errors"`      // operations that failed (go-ycsb's *_ERROR)
	Ops        []opStats `json:"ops"`
	// Caches are a coopkv store's cache figures over the phase; nil for
	// the other stores.
	Caches *cacheStats `json:"caches,omitempty"`
}

// cacheStats are a coopkv store's lookups in its two caches during one
// phase: where its reads were served says more about a figure than the
// figure does (a read that misses both caches is a pread).
type cacheStats struct {
	RowCacheHits      int64   `json:"row_cache_hits"`
	RowCacheMisses    int64   `json:"row_cache_misses"`
	RowCacheHitRate   float64 `json:"row_cache_hit_rate"`
	BlockCacheHits    int64   `json:"block_cache_hits"`
	BlockCacheMisses  int64   `json:"block_cache_misses"`
	BlockCacheHitRate float64 `json:"block_cache_hit_rate"`
}

// kvStore is a binding with a coopkv store underneath (coopkvdb.DB).
type kvStore interface{ KV() *kv.DB }

// cacheDelta returns the cache lookups between two snapshots of a store.
func cacheDelta(before, after kv.Stats) *cacheStats {
	c := &cacheStats{
		RowCacheHits:     after.RowCache.Hits - before.RowCache.Hits,
		RowCacheMisses:   after.RowCache.Misses - before.RowCache.Misses,
		BlockCacheHits:   after.Storage.BlockCacheHits - before.Storage.BlockCacheHits,
		BlockCacheMisses: after.Storage.BlockCacheMisses - before.Storage.BlockCacheMisses,
	}
	c.RowCacheHitRate = hitRate(c.RowCacheHits, c.RowCacheMisses)
	c.BlockCacheHitRate = hitRate(c.BlockCacheHits, c.BlockCacheMisses)
	return c
}

func hitRate(hits, misses int64) float64 {
	if hits+misses <= 0 {
		return 0
	}
	return float64(hits) / float64(hits+misses)
}

// opStats are go-ycsb's measurements of one operation type in a phase.
// Latencies are in microseconds, from go-ycsb's HDR histogram (3
// significant digits). In workload F, READ and UPDATE include the read and
// the write of each READ_MODIFY_WRITE, which go-ycsb measures both alone
// and together.
type opStats struct {
	Op        string  `json:"op"` // READ, UPDATE, INSERT, SCAN, READ_MODIFY_WRITE, …
	Count     int64   `json:"count"`
	Errors    int64   `json:"errors"`
	OpsPerSec float64 `json:"ops_per_sec"` // Count / the phase's elapsed time
	AvgUs     int64   `json:"avg_us"`
	MinUs     int64   `json:"min_us"`
	MaxUs     int64   `json:"max_us"`
	P50Us     int64   `json:"p50_us"`
	P90Us     int64   `json:"p90_us"`
	P95Us     int64   `json:"p95_us"`
	P99Us     int64   `json:"p99_us"`
	P999Us    int64   `json:"p999_us"`
	P9999Us   int64   `json:"p9999_us"`
}

// op returns the stats of op, if the phase has them.
func (ps *phaseStats) op(name string) (opStats, bool) {
	for _, o := range ps.Ops {
		if o.Op == name {
			return o, true
		}
	}
	return opStats{}, false
}

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
	}
	fmt.Fprintf(errOut, "%s: %d records of %d × %d B, %d operations per workload, %d threads, workloads %s\n",
		res.Tool, cfg.records, cfg.fieldCount, cfg.fieldLen, cfg.operations, cfg.threads, strings.Join(cfg.workloads, ","))
	for _, name := range cfg.stores {
		info, phases, err := runStore(ctx, cfg, name, errOut)
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
		fmt.Fprintf(errOut, "wrote %s\n", cfg.jsonPath)
	}
	if cfg.markdown {
		return writeMarkdown(out, res)
	}
	return writePlain(out, res)
}

// runStore loads store name into a fresh temporary directory and runs the
// workloads on it. The directory is removed at the end.
func runStore(ctx context.Context, cfg *config, name string, errOut io.Writer) (info storeInfo, phases []phaseStats, err error) {
	s := knownStores[name]
	dir, err := os.MkdirTemp(cfg.dir, "ycsb-"+name+"-")
	if err != nil {
		return storeInfo{Name: name}, nil, err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()

	sp := storeProps(s, dir, cfg.props)
	info = storeInfo{Name: name, Driver: s.driver, About: s.about, Properties: sp}
	p, err := phaseProps(cfg, "a", false, sp, filepath.Join(dir, "measurement-load.json"))
	if err != nil {
		return info, nil, err
	}
	db, err := openStore(s, p)
	if err != nil {
		return info, nil, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()

	fmt.Fprintf(errOut, "[%s] load: %d records …\n", name, cfg.records)
	ps, err := runPhase(ctx, p, db, name, loadPhase, cfg.records)
	if err != nil {
		return info, phases, err
	}
	progress(errOut, &ps)
	phases = append(phases, ps)
	for _, w := range cfg.workloads {
		p, err := phaseProps(cfg, w, true, sp, filepath.Join(dir, "measurement-"+w+".json"))
		if err != nil {
			return info, phases, err
		}
		fmt.Fprintf(errOut, "[%s] workload %s: %d operations …\n", name, w, cfg.operations)
		ps, err := runPhase(ctx, p, db, name, w, cfg.operations)
		if err != nil {
			return info, phases, err
		}
		progress(errOut, &ps)
		phases = append(phases, ps)
	}
	return info, phases, nil
}

// progress reports a finished phase on errOut.
func progress(errOut io.Writer, ps *phaseStats) {
	fmt.Fprintf(errOut, "[%s] %s: %.0f ops/s in %.2fs", ps.Store, ps.Workload, ps.OpsPerSec, ps.Elapsed)
	for _, o := range ps.Ops {
		fmt.Fprintf(errOut, ", %s p99 %dµs", o.Op, o.P99Us)
	}
	if ps.Errors > 0 {
		fmt.Fprintf(errOut, ", %d ERRORS", ps.Errors)
	}
	if c := ps.Caches; c != nil {
		fmt.Fprintf(errOut, "; row cache %.0f%% of %d lookups hit, block cache %.0f%% of %d",
			100*c.RowCacheHitRate, c.RowCacheHits+c.RowCacheMisses, 100*c.BlockCacheHitRate, c.BlockCacheHits+c.BlockCacheMisses)
	}
	fmt.Fprintln(errOut)
}

// runPhase runs one phase with go-ycsb's client (load when p's
// dotransactions is false, the workload otherwise) and reads go-ycsb's
// measurements of it.
func runPhase(ctx context.Context, p *properties.Properties, db ycsb.DB, store, name string, ops int64) (phaseStats, error) {
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
	c := client.NewClient(p, wl, client.DbWrapper{DB: db})
	kdb, isKV := db.(kvStore)
	var before kv.Stats
	if isKV {
		before = kdb.KV().Stats()
	}
	start := time.Now()
	c.Run(ctx)
	elapsed := time.Since(start)
	var caches *cacheStats
	if isKV {
		caches = cacheDelta(before, kdb.KV().Stats())
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
		Errors:     errs,
		Ops:        ops2,
		Caches:     caches,
	}, nil
}

// opOrder is the order of operations in results.
var opOrder = []string{"READ", "UPDATE", "INSERT", "SCAN", "READ_MODIFY_WRITE", "DELETE"}

// readMeasurements reads the summary go-ycsb's histogram measurement wrote
// as JSON (outputstyle=json): one object per operation, its values strings
// under the column names of go-ycsb's table. TOTAL is left out (it counts
// a read-modify-write's halves, not the workload's operations); an
// operation's _ERROR line becomes its Errors.
func readMeasurements(path string, elapsed time.Duration) ([]opStats, int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("go-ycsb's measurements: %w", err)
	}
	var rows []map[string]string
	if len(strings.TrimSpace(string(b))) > 0 { // nothing measured: nothing written
		if err := json.Unmarshal(b, &rows); err != nil {
			return nil, 0, fmt.Errorf("go-ycsb's measurements in %s: %w", path, err)
		}
	}
	byOp := map[string]*opStats{}
	get := func(op string) *opStats {
		if o, ok := byOp[op]; ok {
			return o
		}
		o := &opStats{Op: op}
		byOp[op] = o
		return o
	}
	var errs []error
	num := func(row map[string]string, col string) int64 {
		n, err := strconv.ParseInt(row[col], 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("go-ycsb's measurements: %s of %s: %w", col, row["Operation"], err))
		}
		return n
	}
	var failed int64
	for _, row := range rows {
		op := row["Operation"]
		switch {
		case op == "TOTAL":
		case strings.HasSuffix(op, "_ERROR"):
			n := num(row, "Count")
			get(strings.TrimSuffix(op, "_ERROR")).Errors += n
			failed += n
		default:
			o := get(op)
			o.Count = num(row, "Count")
			o.OpsPerSec = float64(o.Count) / elapsed.Seconds()
			o.AvgUs = num(row, "Avg(us)")
			o.MinUs = num(row, "Min(us)")
			o.MaxUs = num(row, "Max(us)")
			o.P50Us = num(row, "50th(us)")
			o.P90Us = num(row, "90th(us)")
			o.P95Us = num(row, "95th(us)")
			o.P99Us = num(row, "99th(us)")
			o.P999Us = num(row, "99.9th(us)")
			o.P9999Us = num(row, "99.99th(us)")
		}
	}
	ops := make([]opStats, 0, len(byOp))
	for _, name := range opOrder {
		if o, ok := byOp[name]; ok {
			ops = append(ops, *o)
			delete(byOp, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byOp)) {
		ops = append(ops, *byOp[name])
	}
	return ops, failed, errors.Join(errs...)
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
func goYCSBVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/pingcap/go-ycsb" {
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

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
	Isolated   bool         `json:"isolated"`  // each store ran in a child process of its own (--isolate)
	Stores     []storeInfo  `json:"stores"`
	Phases     []phaseStats `json:"phases"` // per store: the load, then the workloads in run order
}

// storeInfo is a store as it was run.
type storeInfo struct {
	Name       string            `json:"name"`
	Driver     string            `json:"driver"` // the go-ycsb binding
	About      string            `json:"about"`
	Properties map[string]string `json:"properties"` // the store's own, as opened (temporary paths included)
	Memory     storeMemory       `json:"memory"`
	// Sizes are a coopkv store's memory bounds in force, and Writes its
	// writes from its open to the end of its last phase; nil for the
	// other stores.
	Sizes  *kvSizes    `json:"sizes,omitempty"`
	Writes *writeStats `json:"writes,omitempty"`
}

// kvSizes are the sizes a coopkv store runs with, in bytes: what bounds
// its memory besides the Go heap.
type kvSizes struct {
	// BlockCacheCapacity is Pebble's block cache, memtables included
	// (Pebble reserves them in it), allocated in C as blocks are read.
	BlockCacheCapacity int64 `json:"block_cache_capacity_bytes"`
	// MemTableSize is one memtable; kv keeps up to four before writes
	// stall (Pebble's MemTableStopWritesThreshold), inside the block
	// cache's capacity.
	MemTableSize int64 `json:"memtable_size_bytes"`
	// RowCacheCapacity is the row cache, on the Go heap; 0 = off.
	RowCacheCapacity int64 `json:"row_cache_capacity_bytes"`
}

// sizesOf returns the sizes in force of a store.
func sizesOf(st kv.Stats) *kvSizes {
	return &kvSizes{
		BlockCacheCapacity: st.Storage.BlockCacheCapacity,
		MemTableSize:       int64(st.Storage.MemTableSize),
		RowCacheCapacity:   st.RowCache.Capacity,
	}
}

// writeStats are the bytes a coopkv store wrote, over one phase
// (phaseStats.Writes) or from its open (storeInfo.Writes).
type writeStats struct {
	// WALBytes is what the write-ahead log wrote: the bytes taken in.
	WALBytes int64 `json:"wal_bytes"`
	// FlushedBytes and CompactedBytes are what memtable flushes and
	// compactions wrote to tables. Over a phase they include the flushes
	// and compactions of what earlier phases wrote, if they ran then.
	FlushedBytes   int64 `json:"flushed_bytes"`
	CompactedBytes int64 `json:"compacted_bytes"`
	// WriteAmp is (WALBytes + FlushedBytes + CompactedBytes) ÷ WALBytes
	// over the same span; 0 when the WAL wrote nothing (a read-only
	// phase).
	WriteAmp float64 `json:"write_amp"`
	// WriteAmpSinceOpen is Pebble's own write amplification since the
	// store opened, at the phase's end (kv.StorageStats.WriteAmp: the same
	// ratio, ingested tables counted in, of which this runner has none).
	// Set on phases only.
	WriteAmpSinceOpen float64 `json:"write_amp_since_open,omitempty"`
}

// writeAmp is (wal + flushed + compacted) ÷ wal, or 0 for no wal.
func writeAmp(wal, flushed, compacted int64) float64 {
	if wal <= 0 {
		return 0
	}
	return float64(wal+flushed+compacted) / float64(wal)
}

// writesSinceOpen are a store's writes from its open to the snapshot st.
func writesSinceOpen(st kv.Stats) *writeStats {
	w := &writeStats{
		WALBytes:       int64(st.Storage.WALBytesWritten),
		FlushedBytes:   int64(st.Storage.FlushedBytes),
		CompactedBytes: int64(st.Storage.CompactedBytes),
	}
	w.WriteAmp = writeAmp(w.WALBytes, w.FlushedBytes, w.CompactedBytes)
	return w
}

// writeDelta returns a store's writes between two snapshots.
func writeDelta(before, after kv.Stats) *writeStats {
	b, a := writesSinceOpen(before), writesSinceOpen(after)
	w := &writeStats{
		WALBytes:          a.WALBytes - b.WALBytes,
		FlushedBytes:      a.FlushedBytes - b.FlushedBytes,
		CompactedBytes:    a.CompactedBytes - b.CompactedBytes,
		WriteAmpSinceOpen: after.Storage.WriteAmp,
	}
	w.WriteAmp = writeAmp(w.WALBytes, w.FlushedBytes, w.CompactedBytes)
	return w
}

// phaseStats is one store's load or one workload on it.
type phaseStats struct {
	Store      string  `json:"store"`
	Workload   string  `json:"workload"`   // "load" or a … f
	Operations int64   `json:"operations"` // records loaded, or operationcount; a read-modify-write is one
	Elapsed    float64 `json:"elapsed_sec"`
	OpsPerSec  float64 `json:"ops_per_sec"` // Operations / Elapsed: YCSB's overall throughput
	// CPUPerOp is the process's CPU time (user + system) over the phase ÷
	// Operations, in µs: the go-ycsb client's share included, alike for
	// every store. On a shared machine it moves less than throughput
	// does, as time lost to other tenants' work is not counted; 0 where
	// the process's CPU time cannot be read.
	CPUPerOp float64   `json:"cpu_us_per_op"`
	Errors   int64     `json:"errors"` // operations that failed (go-ycsb's *_ERROR)
	Ops      []opStats `json:"ops"`
	// Memory is the process's memory during the phase.
	Memory memStats `json:"memory"`
	// Caches and Writes are a coopkv store's cache lookups and writes over
	// the phase; nil for the other stores.
	Caches *cacheStats `json:"caches,omitempty"`
	Writes *writeStats `json:"writes,omitempty"`
	// TxnRetries is how many times an update's transaction ran again
	// after a conflict during the phase, within the same operation (a
	// binding that retries: coopkv's, badger v4's); nil for the others.
	TxnRetries *int64 `json:"txn_retries,omitempty"`
}

// txnStore is a binding whose updates are transactions that it runs
// again on a conflict (coopkvdb.DB, badger4db.DB).
type txnStore interface{ TxnRetries() int64 }

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
		Isolated:   cfg.isolate,
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
	start, _ := readRSS()
	info.Memory.StartRSS = start.rss
	p, err := phaseProps(cfg, "a", false, sp, filepath.Join(dir, "measurement-load.json"))
	if err != nil {
		return info, nil, err
	}
	db, err := openStore(s, p)
	if err != nil {
		return info, nil, err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	kdb, isKV := db.(kvStore)
	if isKV {
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
		if isKV {
			info.Writes = writesSinceOpen(kdb.KV().Stats())
		}
	}()

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
	fmt.Fprintf(errOut, "[%s] %s: %.0f ops/s in %.2fs, %.1f µs CPU/op", ps.Store, ps.Workload, ps.OpsPerSec, ps.Elapsed, ps.CPUPerOp)
	for _, o := range ps.Ops {
		fmt.Fprintf(errOut, ", %s p99 %dµs", o.Op, o.P99Us)
	}
	if ps.Errors > 0 {
		fmt.Fprintf(errOut, ", %d ERRORS", ps.Errors)
	}
	if r := ps.TxnRetries; r != nil && *r > 0 {
		fmt.Fprintf(errOut, ", %d transactions run again", *r)
	}
	if c := ps.Caches; c != nil {
		fmt.Fprintf(errOut, "; row cache %.0f%% of %d lookups hit, block cache %.0f%% of %d",
			100*c.RowCacheHitRate, c.RowCacheHits+c.RowCacheMisses, 100*c.BlockCacheHitRate, c.BlockCacheHits+c.BlockCacheMisses)
	}
	m := &ps.Memory
	fmt.Fprintf(errOut, "; peak RSS %s (%s; %s at the start), Go heap %s at the end",
		mib(m.PeakRSS), m.PeakSource, mib(m.StartRSS), mib(m.GoHeap))
	if w := ps.Writes; w != nil {
		fmt.Fprintf(errOut, "; WAL %s, flushed %s, compacted %s, write amp %s (since open %.2f)",
			mib(w.WALBytes), mib(w.FlushedBytes), mib(w.CompactedBytes), ampString(w.WriteAmp), w.WriteAmpSinceOpen)
	}
	fmt.Fprintln(errOut)
}

// storeSummary reports a finished store's memory, and a coopkv store's
// sizes and writes, on errOut.
func storeSummary(errOut io.Writer, info *storeInfo) {
	fmt.Fprintf(errOut, "[%s] peak RSS %s (%s), %s before it opened", info.Name,
		mib(info.Memory.PeakRSS), info.Memory.PeakSource, mib(info.Memory.StartRSS))
	if z := info.Sizes; z != nil {
		fmt.Fprintf(errOut, "; block cache %s, memtable %s, row cache %s",
			mib(z.BlockCacheCapacity), mib(z.MemTableSize), mib(z.RowCacheCapacity))
	}
	if w := info.Writes; w != nil {
		fmt.Fprintf(errOut, "; since open: WAL %s, flushed %s, compacted %s, write amp %s",
			mib(w.WALBytes), mib(w.FlushedBytes), mib(w.CompactedBytes), ampString(w.WriteAmp))
	}
	fmt.Fprintln(errOut)
}

// mib formats a size in bytes as MiB.
func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// ampString formats a write amplification, "–" for none (no WAL bytes).
func ampString(a float64) string {
	if a == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a)
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
	tdb, isTxn := db.(txnStore)
	var retries *int64
	if isTxn {
		n := tdb.TxnRetries()
		retries = &n
	}
	mem := startMemSampler(sampleEvery)
	start := time.Now()
	cpu0 := processCPU()
	c.Run(ctx)
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
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
		Ops:        ops2,
		Memory:     memory,
		Caches:     caches,
		Writes:     writes,
		TxnRetries: retries,
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

package main

import (
	"fmt"
	"io"

	// go-ycsb's core workload registers itself.
	_ "github.com/pingcap/go-ycsb/pkg/workload"
)

// Progress on stderr: a line per finished phase and per finished store.

// progress reports a finished phase on errOut.
func progress(errOut io.Writer, ps *phaseStats) {
	fmt.Fprintf(errOut, "[%s] %s: %.0f ops/s in %.2fs, %.1f µs CPU/op", ps.Store, ps.Workload, ps.OpsPerSec, ps.Elapsed, ps.CPUPerOp)
	for _, o := range ps.Ops {
		fmt.Fprintf(errOut, ", %s p99 %dµs", o.Op, o.P99Us)
	}
	if ps.Errors > 0 {
		fmt.Fprintf(errOut, ", %d ERRORS", ps.Errors)
		if ps.FirstError != "" {
			fmt.Fprintf(errOut, " (the first: %s)", ps.FirstError)
		}
	}
	if r := ps.TxnRetries; r != nil && *r > 0 {
		fmt.Fprintf(errOut, ", %d transactions run again", *r)
	}
	if ps.First5s > 0 || ps.Steady > 0 {
		fmt.Fprintf(errOut, "; first 5 s %s ops/s, steady %s ops/s, first 5 s ÷ steady %s",
			rateString(ps.First5s), rateString(ps.Steady), warmRatio(ps))
	}
	if c := ps.Caches; c != nil {
		fmt.Fprintf(errOut, "; row cache %.0f%% of %d lookups hit, block cache %.0f%% of %d",
			100*c.RowCacheHitRate, c.RowCacheHits+c.RowCacheMisses, 100*c.BlockCacheHitRate, c.BlockCacheHits+c.BlockCacheMisses)
		if c.WarmKeys > 0 || c.HotSetWarmedIn > 0 {
			fmt.Fprintf(errOut, ", warming read %d keys (%s of blocks)", c.WarmKeys, mib(c.WarmBlockBytes))
			if c.HotSetWarmedIn > 0 {
				fmt.Fprintf(errOut, ", the hot set warm %.2f s after open", c.HotSetWarmedIn)
			}
		}
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

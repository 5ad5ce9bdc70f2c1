package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// workloadTitles name the workloads in tables.
var workloadTitles = map[string]string{
	loadPhase: "load",
	"a":       "A: 50% read, 50% update",
	"b":       "B: 95% read, 5% update",
	"c":       "C: 100% read",
	"d":       "D: 95% read latest, 5% insert",
	"e":       "E: 95% scan ≤ 100, 5% insert",
	"f":       "F: 50% read, 50% read-modify-write",
}

// tableOrder is the order of the rows of a table: the load, then the
// workloads by name (they ran in runOrder).
func tableOrder(res *results) []string {
	return append([]string{loadPhase}, slices.Sorted(slices.Values(res.Workloads))...)
}

// phase returns the stats of store's phase w.
func (res *results) phase(store, w string) (*phaseStats, bool) {
	for i := range res.Phases {
		if ps := &res.Phases[i]; ps.Store == store && ps.Workload == w {
			return ps, true
		}
	}
	return nil, false
}

// storeNames are the stores of res, in the order they ran.
func (res *results) storeNames() []string {
	names := make([]string, len(res.Stores))
	for i, s := range res.Stores {
		names[i] = s.Name
	}
	return names
}

// opsOf are the operations that some store measured in phase w, in
// opOrder.
func (res *results) opsOf(w string) []string {
	var ops []string
	for _, ps := range res.Phases {
		if ps.Workload != w {
			continue
		}
		for _, o := range ps.Ops {
			if !slices.Contains(ops, o.Op) {
				ops = append(ops, o.Op)
			}
		}
	}
	slices.SortStableFunc(ops, func(a, b string) int { return opRank(a) - opRank(b) })
	return ops
}

func opRank(op string) int {
	if i := slices.Index(opOrder, op); i >= 0 {
		return i
	}
	return len(opOrder)
}

// writePlain writes every phase of every store as one aligned table: the
// phase's throughput, then each operation's count, rate and percentiles.
func writePlain(w io.Writer, res *results) error {
	fmt.Fprintf(w, "%s, %d records of %d × %d B, %d operations, %d threads (%s/%s, %d CPUs)%s\n\n",
		res.Tool, res.Records, res.FieldCount, res.FieldLen, res.Operations, res.Threads, res.GOOS, res.GOARCH, res.NumCPU, reopenNote(res))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tworkload\tops/s\top\tcount\top/s\tp50 µs\tp99 µs\tp99.9 µs\tmax µs\terrors\t")
	for _, store := range res.storeNames() {
		for _, wl := range tableOrder(res) {
			ps, ok := res.phase(store, wl)
			if !ok {
				continue
			}
			for i, o := range ps.Ops {
				lead := "\t\t"
				if i == 0 {
					lead = fmt.Sprintf("%s\t%s\t%.0f", store, wl, ps.OpsPerSec)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t\n",
					lead, o.Op, o.Count, o.OpsPerSec, o.P50Us, o.P99Us, o.P999Us, o.MaxUs, o.Errors)
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintf(w, "\n%s\n\n", cpuTitle)
	if err := cpuTable(res).plain(w); err != nil {
		return err
	}
	peak, heap := memoryTables(res)
	fmt.Fprintf(w, "\n%s\n\n", peakTitle(res))
	if err := peak.plain(w); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n\n", heapTitle)
	if err := heap.plain(w); err != nil {
		return err
	}
	if t := warmTable(res); t != nil {
		fmt.Fprintf(w, "\n%s\n\n", warmTitle)
		if err := t.plain(w); err != nil {
			return err
		}
	}
	if t := reopenTable(res); t != nil {
		fmt.Fprintf(w, "\n%s\n\n", reopenTitle)
		if err := t.plain(w); err != nil {
			return err
		}
	}
	if lines := writeAmpLines(res); len(lines) > 0 {
		fmt.Fprintf(w, "\n%s\n", writeAmpTitle)
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	if l := retriesLine(res); l != "" {
		fmt.Fprintf(w, "\n%s\n", l)
	}
	return nil
}

// pivot is a table of phases (rows) by stores (columns), for the memory
// figures; the first column is the phase.
type pivot struct {
	header []string
	rows   [][]string
}

// markdown writes p as a markdown table, its figures right-aligned.
func (p *pivot) markdown(b *strings.Builder) {
	b.WriteString("| " + strings.Join(p.header, " | ") + " |\n|---|")
	b.WriteString(strings.Repeat("---:|", len(p.header)-1))
	b.WriteString("\n")
	for _, r := range p.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}

// plain writes p as an aligned plain-text table.
func (p *pivot) plain(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(p.header, "\t")+"\t")
	for _, r := range p.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	return tw.Flush()
}

// shortTitle names phase w in a narrow column: load, A … F.
func shortTitle(w string) string {
	if w == loadPhase {
		return w
	}
	return strings.ToUpper(w)
}

// mibCell formats a size in bytes as whole MiB, "–" for none.
func mibCell(b int64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(b)/(1<<20))
}

// peers are the stores of res that are not coopkv's, when a coopkv store
// (base, see ratioBase) ran to compare them with.
func (res *results) peers() (base string, peers []string) {
	stores := res.storeNames()
	base, ok := ratioBase(stores)
	if !ok {
		return "", nil
	}
	for _, s := range stores {
		if !strings.HasPrefix(s, "coopkv") {
			peers = append(peers, s)
		}
	}
	return base, peers
}

// memoryTables are the peak resident set of every store in every phase
// and over its whole run, with the first coopkv store's peak divided by
// the larger of its peers' in the same row; and the Go heap at each
// phase's end. Sizes are MiB.
func memoryTables(res *results) (peak, heap *pivot) {
	stores := res.storeNames()
	base, peers := res.peers()
	peak = &pivot{header: append([]string{"phase"}, stores...)}
	heap = &pivot{header: append([]string{"phase"}, stores...)}
	if len(peers) > 0 {
		peak.header = append(peak.header, base+" ÷ larger peer")
	}
	// ratio is base's figure over the largest of the peers'.
	ratio := func(of func(store string) int64) string {
		var top int64
		for _, p := range peers {
			top = max(top, of(p))
		}
		if b := of(base); b > 0 && top > 0 {
			return fmt.Sprintf("%.2f", float64(b)/float64(top))
		}
		return "–"
	}
	for _, wl := range tableOrder(res) {
		of := func(store string) int64 {
			if ps, ok := res.phase(store, wl); ok {
				return ps.Memory.PeakRSS
			}
			return 0
		}
		prow := []string{shortTitle(wl)}
		hrow := []string{shortTitle(wl)}
		for _, s := range stores {
			prow = append(prow, mibCell(of(s)))
			var h int64
			if ps, ok := res.phase(s, wl); ok {
				h = ps.Memory.GoHeap
			}
			hrow = append(hrow, mibCell(h))
		}
		if len(peers) > 0 {
			prow = append(prow, ratio(of))
		}
		peak.rows = append(peak.rows, prow)
		heap.rows = append(heap.rows, hrow)
	}
	of := func(store string) int64 {
		for _, si := range res.Stores {
			if si.Name == store {
				return si.Memory.PeakRSS
			}
		}
		return 0
	}
	row := []string{"whole store"}
	for _, s := range stores {
		row = append(row, mibCell(of(s)))
	}
	if len(peers) > 0 {
		row = append(row, ratio(of))
	}
	peak.rows = append(peak.rows, row)
	return peak, heap
}

// sourcePhrases say in words where a peak came from.
var sourcePhrases = map[string]string{
	sourceHWM:       "the kernel's high-water mark (VmHWM), reset at the phase's start",
	sourceStatm:     "the largest of /proc/self/statm's samples every 50 ms",
	sourceGoRuntime: "the largest sample of the Go runtime's own memory (no /proc here: C allocations and mmapped files left out)",
	sourceRusage:    "its own process's peak (getrusage; --isolate)",
	sourcePhases:    "the largest of its phases' (the stores shared one process)",
}

// peakTitle introduces the peak table, saying where its figures came from.
func peakTitle(res *results) string {
	var phaseSrc, storeSrc []string
	for _, ps := range res.Phases {
		if p := sourcePhrases[ps.Memory.PeakSource]; p != "" && !slices.Contains(phaseSrc, p) {
			phaseSrc = append(phaseSrc, p)
		}
	}
	for _, si := range res.Stores {
		if p := sourcePhrases[si.Memory.PeakSource]; p != "" && !slices.Contains(storeSrc, p) {
			storeSrc = append(storeSrc, p)
		}
	}
	t := "Peak resident memory (RSS), MiB"
	if len(phaseSrc) > 0 {
		t += "; per phase " + strings.Join(phaseSrc, " or ")
	}
	if len(storeSrc) > 0 {
		t += "; per store " + strings.Join(storeSrc, " or ")
	}
	return t + ":"
}

// cpuTitle introduces the CPU table.
const cpuTitle = "CPU time of the whole process per operation, µs (user + system; the go-ycsb client's share included, alike for every store):"

// cpuTable is each store's CPU time per operation in every phase.
func cpuTable(res *results) *pivot {
	stores := res.storeNames()
	t := &pivot{header: append([]string{"phase"}, stores...)}
	for _, wl := range tableOrder(res) {
		row := []string{shortTitle(wl)}
		for _, s := range stores {
			cell := "–"
			if ps, ok := res.phase(s, wl); ok && ps.CPUPerOp > 0 {
				cell = fmt.Sprintf("%.1f", ps.CPUPerOp)
			}
			row = append(row, cell)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// heapTitle introduces the Go heap table.
const heapTitle = "Go heap at the phase's end, MiB (objects live or not yet swept; what the RSS holds beyond the Go runtime's memory is mostly " +
	"C allocations — Pebble's block cache and memtables — and mmapped files; pages never written, as of badger's preallocated memtables, count here but are not resident):"

// writeAmpTitle introduces the write-amplification lines.
const writeAmpTitle = "Write amplification of the coopkv stores, (WAL + flushed + compacted bytes) ÷ WAL bytes, per phase and since the store opened:"

// writeAmpLines are one line per coopkv store: its write amplification
// per phase and since it opened, and its sizes in force.
func writeAmpLines(res *results) []string {
	var lines []string
	for _, si := range res.Stores {
		if si.Writes == nil {
			continue
		}
		var per []string
		for _, wl := range tableOrder(res) {
			if ps, ok := res.phase(si.Name, wl); ok && ps.Writes != nil {
				per = append(per, shortTitle(wl)+" "+ampString(ps.Writes.WriteAmp))
			}
		}
		w := si.Writes
		l := fmt.Sprintf("%s: %s; since open %s (WAL %s, flushed %s, compacted %s)",
			si.Name, strings.Join(per, ", "), ampString(w.WriteAmp), mib(w.WALBytes), mib(w.FlushedBytes), mib(w.CompactedBytes))
		if z := si.Sizes; z != nil {
			l += fmt.Sprintf("; block cache %s (memtables included), memtable %s, row cache %s",
				mib(z.BlockCacheCapacity), mib(z.MemTableSize), mib(z.RowCacheCapacity))
		}
		lines = append(lines, l+".")
	}
	return lines
}

// ratioBase is the store the markdown's ratio columns divide: the first
// coopkv store that ran, or none.
func ratioBase(stores []string) (string, bool) {
	for _, s := range stores {
		if strings.HasPrefix(s, "coopkv") {
			return s, true
		}
	}
	return "", false
}

// writeMarkdown writes four tables: each store's throughput per workload,
// with the first coopkv store's throughput divided by each peer's; each
// operation's p99 per workload and store; each store's peak resident set
// per phase, with the first coopkv store's divided by the larger peer's;
// and the Go heap at each phase's end. Then, with --timeline and --reopen,
// the warm-up and reopen tables; then the coopkv stores' write
// amplification, a line each.
func writeMarkdown(w io.Writer, res *results) error {
	stores := res.storeNames()
	base, peers := res.peers()

	var b strings.Builder
	fmt.Fprintf(&b, "%s; %d records of %d × %d B; %d operations per workload; %d threads; %s %s/%s, %d CPUs%s.\n\n",
		res.Tool, res.Records, res.FieldCount, res.FieldLen, res.Operations, res.Threads, res.GoVersion, res.GOOS, res.GOARCH, res.NumCPU, reopenNote(res))

	b.WriteString("Throughput, operations per second:\n\n| workload |")
	for _, s := range stores {
		fmt.Fprintf(&b, " %s |", s)
	}
	for _, p := range peers {
		fmt.Fprintf(&b, " %s ÷ %s |", base, p)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---:|", len(stores)+len(peers)))
	b.WriteString("\n")
	for _, wl := range tableOrder(res) {
		fmt.Fprintf(&b, "| %s |", workloadTitles[wl])
		for _, s := range stores {
			if ps, ok := res.phase(s, wl); ok {
				fmt.Fprintf(&b, " %.0f |", ps.OpsPerSec)
			} else {
				b.WriteString(" – |")
			}
		}
		for _, p := range peers {
			bp, ok1 := res.phase(base, wl)
			pp, ok2 := res.phase(p, wl)
			if ok1 && ok2 && pp.OpsPerSec > 0 {
				fmt.Fprintf(&b, " %.2f |", bp.OpsPerSec/pp.OpsPerSec)
			} else {
				b.WriteString(" – |")
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\np99 latency per operation, µs:\n\n| workload | operation |")
	for _, s := range stores {
		fmt.Fprintf(&b, " %s |", s)
	}
	b.WriteString("\n|---|---|")
	b.WriteString(strings.Repeat("---:|", len(stores)))
	b.WriteString("\n")
	for _, wl := range tableOrder(res) {
		title := workloadTitles[wl]
		if wl != loadPhase {
			title = strings.ToUpper(wl)
		}
		for _, op := range res.opsOf(wl) {
			fmt.Fprintf(&b, "| %s | %s |", title, op)
			for _, s := range stores {
				ps, ok := res.phase(s, wl)
				var o opStats
				if ok {
					o, ok = ps.op(op)
				}
				if ok && o.Count > 0 {
					fmt.Fprintf(&b, " %d |", o.P99Us)
				} else {
					b.WriteString(" – |")
				}
			}
			b.WriteString("\n")
		}
	}

	fmt.Fprintf(&b, "\n%s\n\n", cpuTitle)
	cpuTable(res).markdown(&b)
	peak, heap := memoryTables(res)
	fmt.Fprintf(&b, "\n%s\n\n", peakTitle(res))
	peak.markdown(&b)
	fmt.Fprintf(&b, "\n%s\n\n", heapTitle)
	heap.markdown(&b)
	if t := warmTable(res); t != nil {
		fmt.Fprintf(&b, "\n%s\n\n", warmTitle)
		t.markdown(&b)
	}
	if t := reopenTable(res); t != nil {
		fmt.Fprintf(&b, "\n%s\n\n", reopenTitle)
		t.markdown(&b)
	}
	if lines := writeAmpLines(res); len(lines) > 0 {
		fmt.Fprintf(&b, "\n%s\n\n", writeAmpTitle)
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}

	var failed []string
	for _, ps := range res.Phases {
		if ps.Errors > 0 {
			failed = append(failed, fmt.Sprintf("%s %s: %d", ps.Store, ps.Workload, ps.Errors))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nFailed operations (counted in the throughput, as YCSB does): %s.\n", strings.Join(failed, "; "))
	}
	if l := retriesLine(res); l != "" {
		fmt.Fprintf(&b, "\n%s\n", l)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// retriesLine says how many updates' transactions ran again after a
// conflict, per store and phase that had any; "" for none.
func retriesLine(res *results) string {
	var runs []string
	for _, ps := range res.Phases {
		if r := ps.TxnRetries; r != nil && *r > 0 {
			runs = append(runs, fmt.Sprintf("%s %s: %d", ps.Store, ps.Workload, *r))
		}
	}
	if len(runs) == 0 {
		return ""
	}
	return "Transactions run again after a conflict (an update's, within the same operation): " + strings.Join(runs, "; ") + "."
}

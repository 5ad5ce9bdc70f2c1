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
	fmt.Fprintf(w, "%s, %d records of %d × %d B, %d operations, %d threads (%s/%s, %d CPUs)\n\n",
		res.Tool, res.Records, res.FieldCount, res.FieldLen, res.Operations, res.Threads, res.GOOS, res.GOARCH, res.NumCPU)
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
	return tw.Flush()
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

// writeMarkdown writes two tables: each store's throughput per workload,
// with the first coopkv store's throughput divided by each peer's; and
// each operation's p99 per workload and store.
func writeMarkdown(w io.Writer, res *results) error {
	stores := res.storeNames()
	base, hasBase := ratioBase(stores)
	var peers []string
	if hasBase {
		for _, s := range stores {
			if !strings.HasPrefix(s, "coopkv") {
				peers = append(peers, s)
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%s; %d records of %d × %d B; %d operations per workload; %d threads; %s %s/%s, %d CPUs.\n\n",
		res.Tool, res.Records, res.FieldCount, res.FieldLen, res.Operations, res.Threads, res.GoVersion, res.GOOS, res.GOARCH, res.NumCPU)

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

	var failed []string
	for _, ps := range res.Phases {
		if ps.Errors > 0 {
			failed = append(failed, fmt.Sprintf("%s %s: %d", ps.Store, ps.Workload, ps.Errors))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, "\nFailed operations (counted in the throughput, as YCSB does): %s.\n", strings.Join(failed, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

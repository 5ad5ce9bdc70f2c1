package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/coopkv/coopkv/coproc"
)

// copMinAmount is the aggregates' filter, amount ≥ it: about half the
// rows pass.
const copMinAmount = rowMaxAmount / 2

// copSureRows is the fewest rows of which an aggregate must count some:
// that none of 64 rows passes the filter has a chance of 2^-64.
const copSureRows = 64

// copWorkload is noisy with coprocessor aggregates for the long scans:
// --scanners goroutines loop on aggregate requests over --long-scan-len
// keys — count(*) and sum(amount) of the rows with amount ≥ 5,000, by
// region — while --clients goroutines do noisy's paced point Gets. Its
// baseline, cop-scan, runs plain scans of the same length instead, so the
// line under the table tells whether a Get beside a running aggregate
// keeps the p99 it has beside a scan.
func copWorkload() *workload {
	return &workload{
		name:     "cop",
		classes:  []class{classGet, classCop},
		rows:     true,
		baseline: "cop-scan",
		clients: func(e *env) []client {
			return getsBeside(e, func(ctx context.Context, e *env, int64n func(int64) int64) (class, error) {
				return classCop, aggregateRandom(ctx, e, int64n, e.cfg.longScanLen)
			})
		},
	}
}

// copScanWorkload is cop's baseline: its Gets beside plain scans, each
// reading every row of --long-scan-len keys from a random start, on the
// same dataset of rows. It is noisy on cop's dataset.
func copScanWorkload() *workload {
	return &workload{
		name:    "cop-scan",
		classes: []class{classGet, classScan},
		rows:    true,
		clients: func(e *env) []client {
			return getsBeside(e, func(ctx context.Context, e *env, int64n func(int64) int64) (class, error) {
				return classScan, scanRandom(ctx, e, int64n, e.cfg.longScanLen)
			})
		},
	}
}

// aggregateRandom sends the aggregate request over n keys (at most every
// key) from a start drawn by int64n, as scanRandom scans them, and checks
// the answer.
func aggregateRandom(ctx context.Context, e *env, int64n func(int64) int64, n int) error {
	count := e.keys.count()
	n = int(min(int64(n), count))
	start := int64n(count - int64(n) + 1)
	resp, err := e.db.Coprocessor(ctx, aggregateRequest(start, n))
	if err != nil {
		return err
	}
	return checkAggregate(resp, start, n)
}

// aggregateRequest is count(*) and sum(amount) of the rows with amount ≥
// copMinAmount among the n keys from key number start, by region.
func aggregateRequest(start int64, n int) *coproc.Request {
	return &coproc.Request{
		Ranges: []coproc.KeyRange{{Start: appendKey(nil, start), End: appendKey(nil, start+int64(n))}},
		Filter: &coproc.Expr{Op: "ge", Args: []*coproc.Expr{
			{Op: "col", Col: "amount"},
			{Op: "const", Value: int64(copMinAmount)},
		}},
		GroupBy: []string{"region"},
		Aggs:    []coproc.Agg{{Func: "count", As: "count"}, {Func: "sum", Col: "amount", As: "sum"}},
	}
}

// checkAggregate checks that resp is a sane answer to aggregateRequest(start,
// n): every key of the range scanned, one row per known region, each with
// a count of at least one and the sum of that many amounts that passed
// the filter, and counts that add up to at most n — and to at least one
// when n is copSureRows or more.
func checkAggregate(resp *coproc.Response, start int64, n int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("aggregate of %d keys from %s: %s", n, appendKey(nil, start), fmt.Sprintf(format, args...))
	}
	if resp.Stats.RowsScanned != int64(n) {
		return bad("scanned %d rows", resp.Stats.RowsScanned)
	}
	total := int64(0)
	seen := make(map[string]bool, len(resp.Rows))
	for _, row := range resp.Rows {
		region, _ := row["region"].(string)
		if !slices.Contains(regionNames, region) || seen[region] {
			return bad("a row of region %v: unknown or repeated", row["region"])
		}
		seen[region] = true
		count, okc := row["count"].(int64)
		sum, oks := row["sum"].(int64)
		if !okc || !oks || count < 1 || sum < count*copMinAmount || sum > count*(rowMaxAmount-1) {
			return bad("region %s: count %v and sum %v are not of amounts in [%d, %d)",
				region, row["count"], row["sum"], copMinAmount, rowMaxAmount)
		}
		total += count
	}
	if total > int64(n) || (total == 0 && n >= copSureRows) {
		return bad("counted %d rows", total)
	}
	return nil
}

// writeComparisons prints, for each workload in rep with a baseline, a
// line per scheduler comparing its Gets' p99 with theirs in the baseline:
// the Gets beside what each runs besides (its last class).
func writeComparisons(w io.Writer, rep *report) error {
	var b strings.Builder
	names := strings.Split(rep.Workload, ",")
	for _, name := range names {
		wl, ok := lookupWorkload(name)
		if !ok || wl.baseline == "" || !slices.Contains(names, wl.baseline) {
			continue
		}
		base, _ := lookupWorkload(wl.baseline)
		get := classGet.String()
		for _, r := range rep.Results {
			if r.Workload != name || r.Class != get {
				continue
			}
			i := slices.IndexFunc(rep.Results, func(x result) bool {
				return x.Workload == base.name && x.Scheduler == r.Scheduler && x.Class == get
			})
			if i < 0 {
				continue
			}
			br := rep.Results[i]
			if b.Len() == 0 {
				b.WriteByte('\n')
			}
			ratio := "-"
			if br.P99us > 0 && r.P99us > 0 {
				ratio = fmt.Sprintf("%.2f×", r.P99us/br.P99us)
			}
			fmt.Fprintf(&b, "%s %s: get p99 %s beside %s, %s beside %s (%s) = %s\n",
				name, r.Scheduler, formatMicros(r.P99us), wl.classes[len(wl.classes)-1],
				formatMicros(br.P99us), base.classes[len(base.classes)-1], base.name, ratio)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

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
// baseline, cop-scan, runs plain scans of the same length instead, just
// before it on each store, so the line under the table tells whether a
// Get beside a running aggregate keeps the p99 it has beside a scan.
func copWorkload() Workload {
	w := &copLoad{}
	w.plain = plain{
		name:  "cop",
		short: "point Gets beside coprocessor aggregates, against beside plain scans",
		long: `cop puts the coprocessor in noisy's scans' place: its store's values are
msgpack rows ({"region", "amount", "ts", and a random pad out to
--value-size}), and --scanners goroutines loop on aggregate requests over
--long-scan-len keys (count and sum of amount where amount >= 5000, by
region) beside noisy's paced Gets. Its baseline "cop-scan" — the same Gets
beside plain scans of as many rows — runs just before it on each
scheduler, and a line under the table compares the Gets' p99 beside each.

` + arrivalLong,
		classes: []class{classGet, classCop},
		rows:    true,
		clients: func(e *env) []client {
			// The aggregates' rows are read inside the store: none to count.
			return getsBeside(e, &w.beside, func(ctx context.Context, e *env, int64n func(int64) int64, _ *int64) (class, error) {
				return classCop, aggregateRandom(ctx, e, int64n, w.beside.longScanLen)
			})
		},
	}
	w.baseline = newCopScan(&w.beside)
	return w
}

type copLoad struct {
	plain
	beside   besideFlags
	baseline *copScanLoad // runs with cop's flags
}

func (w *copLoad) Flags(fs *pflag.FlagSet) { w.beside.add(fs, "aggregates") }
func (w *copLoad) Validate() error         { return w.beside.validate() }

// Phases are cop-scan's, then cop's own.
func (w *copLoad) Phases() []Phase { return append(w.baseline.phases(), w.phases()...) }

func (w *copLoad) Summarize(out io.Writer, rep *Report) error {
	return writeComparisons(out, w.name, w.classes[len(w.classes)-1], w.baseline.name, w.baseline.classes[len(w.baseline.classes)-1], rep)
}

// copScanWorkload is cop's baseline on its own: its Gets beside plain
// scans, each reading every row of --long-scan-len keys from a random
// start, on the same dataset of rows. It is noisy on cop's dataset.
func copScanWorkload() Workload {
	w := newCopScan(nil)
	w.beside = &w.own
	return w
}

// newCopScan returns cop-scan with the flags of beside (cop's), or, for
// nil, its own (copScanWorkload sets them).
func newCopScan(beside *besideFlags) *copScanLoad {
	w := &copScanLoad{beside: beside}
	w.plain = plain{
		name:    "cop-scan",
		short:   "cop's baseline: its Gets beside plain scans of its rows",
		long:    "cop-scan is cop's baseline on its own: its paced Gets beside --scanners goroutines looping on plain scans of --long-scan-len rows of cop's dataset.\n\n" + arrivalLong,
		classes: []class{classGet, classScan},
		rows:    true,
		clients: func(e *env) []client {
			return getsBeside(e, w.beside, func(ctx context.Context, e *env, int64n func(int64) int64, rows *int64) (class, error) {
				return classScan, scanRandom(ctx, e, int64n, w.beside.longScanLen, rows)
			})
		},
	}
	return w
}

type copScanLoad struct {
	plain
	beside *besideFlags
	own    besideFlags
}

func (w *copScanLoad) Flags(fs *pflag.FlagSet) { w.beside.add(fs, "long scans") }
func (w *copScanLoad) Validate() error         { return w.beside.validate() }

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

// writeComparisons prints, for the workload name in rep, a line per
// scheduler comparing its Gets' p99 beside its long reads (class long)
// with theirs beside the long reads (baseLong) of its baseline base.
func writeComparisons(w io.Writer, name string, long class, base string, baseLong class, rep *Report) error {
	var b strings.Builder
	get := classGet.String()
	for _, r := range rep.Results {
		if r.Workload != name || r.Class != get {
			continue
		}
		i := slices.IndexFunc(rep.Results, func(x Result) bool {
			return x.Workload == base && x.Scheduler == r.Scheduler && x.Class == get
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
			name, r.Scheduler, formatMicros(r.P99us), long,
			formatMicros(br.P99us), baseLong, base, ratio)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

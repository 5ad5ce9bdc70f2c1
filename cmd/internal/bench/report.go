package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// report is a run's results, in the JSON shape that scripts compare runs
// by (the kvbench issue fixes it; do not rename the fields).
type Report struct {
	Workload  string  `json:"workload"` // the workload's sections (Phase.Section), comma-joined: "noisy", "cop-scan,cop"
	Keys      int64   `json:"keys"`
	ValueSize int     `json:"value_size"`
	Workers   int     `json:"workers"`
	DurationS float64 `json:"duration_s"`
	// The stores' setup where it departs from the defaults (StoreSetup),
	// each absent when it does not. SimulatedDiskLatencyUs is the latency
	// in µs that a simulated disk added to every table read (kvbench
	// --disk-latency): the figures are a simulated disk's, not a real
	// one's. CacheSizeBytes is the block cache (kvbench --cache-size).
	SimulatedDiskLatencyUs float64  `json:"simulated_disk_latency_us,omitempty"`
	CacheSizeBytes         int64    `json:"cache_size_bytes,omitempty"`
	Results                []Result `json:"results"`
	// Interrupted: the run was stopped (Ctrl-C) before its end; Results
	// hold what it measured by then.
	Interrupted bool `json:"interrupted,omitempty"`
}

// result is one (workload, scheduler, class, group)'s figures over a
// measured phase. Latencies are in microseconds; a paced Get class's (see
// Pacing) are from when each Get was due to its return.
type Result struct {
	Workload  string  `json:"workload"`
	Scheduler string  `json:"scheduler"`
	Class     string  `json:"class"`
	Group     string  `json:"group"` // "" unless the workload uses resource groups
	Ops       int64   `json:"ops"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	P999us    float64 `json:"p999_us"`
	MaxUs     float64 `json:"max_us"`
	Errors    int64   `json:"errors"`
	// Rows are the rows a scan class read, the scans the phase's end cut
	// off included (so a scan longer than the phase counts too), and
	// RowsPerSec those per second of the phase; absent for other classes.
	Rows       int64   `json:"rows,omitempty"`
	RowsPerSec float64 `json:"rows_per_sec,omitempty"`
	// RUPerSec is, for a resource group's main class, the request units
	// the group consumed per second of the measured phase; absent for
	// workloads without groups.
	RUPerSec float64 `json:"ru_per_sec,omitempty"`
	// Interrupted: the run was stopped during this measured phase, so
	// the figures cover only the part that ran (ops/s over that part).
	Interrupted bool `json:"interrupted,omitempty"`
	// OverrunMs is how long, in milliseconds, the phase's clients took to
	// stop after its end: the operations in flight then are cancelled by
	// their context, and a store whose calls do not end with their
	// context makes the phase overrun. Absent when they stopped at once.
	OverrunMs float64 `json:"overrun_ms,omitempty"`
	// Pacing is set for the Gets of paced clients (noisy's, cop's,
	// groups' oltp): its fields then join the others in the JSON.
	*Pacing
	// Txns is set for transactions (txn's transfers), whose Ops are the
	// transactions committed and OpsPerSec the commits per second: its
	// fields then join the others in the JSON.
	*Txns
	// Expiry is set for the Gets of kvbench ttl on the embedded store:
	// the sessions and the disk as its sampler saw them.
	*Expiry

	firstErr error // shown under the table; not part of the JSON
}

// Pacing is a paced Get class's further figures: how it was offered Gets
// and how the store kept up, and the Gets' service times beside their
// latencies from when they were due (p50_us etc.). It is exported only so
// that encoding/json fills it when it reads a report back.
type Pacing struct {
	Arrival string `json:"arrival"` // "fixed" or "think" (see --arrival)
	// OfferedPerSec is the Gets per second the clients asked for, in all
	// (--clients / --think; groups: --oltp-rate); 0 if unbounded
	// (--think 0). Under think arrival it is the most they could get.
	OfferedPerSec float64 `json:"offered_per_sec"`
	// AchievedPct is OpsPerSec, the Gets that completed per second, as a
	// percentage of OfferedPerSec; 0 if that is unbounded.
	AchievedPct float64 `json:"achieved_pct"`
	// Overdue is how many Gets were due but not served when the phase
	// ended; their latencies so far are in the percentiles (not in Ops).
	Overdue int64 `json:"overdue"`
	// The service time: from the call of each Get to its return.
	ServiceP50us  float64 `json:"service_p50_us"`
	ServiceP99us  float64 `json:"service_p99_us"`
	ServiceP999us float64 `json:"service_p999_us"`
	ServiceMaxUs  float64 `json:"service_max_us"`
	// How late each Get was called, from when it was due: the client's
	// wait for a P (Go's scheduler) before the store saw the Get. e2e is
	// about late + service.
	LateP50us  float64 `json:"late_p50_us"`
	LateP99us  float64 `json:"late_p99_us"`
	LateP999us float64 `json:"late_p999_us"`
	LateMaxUs  float64 `json:"late_max_us"`
}

// Txns is a class of transactions' further figures: the conflicts they
// met. It is exported only so that encoding/json fills it when it reads
// a report back.
type Txns struct {
	// Conflicts is every kv.ErrConflict an attempt met, Retries +
	// Failures; ConflictsPerSec those per second of the phase.
	Conflicts       int64   `json:"conflicts"`
	ConflictsPerSec float64 `json:"conflicts_per_sec"`
	// Retries are the attempts run again after a conflict (kv.Update's
	// second and later), those of a transaction the phase's end cut off
	// included.
	Retries int64 `json:"retries"`
	// Failures are the transactions that ended in a conflict — kv.Update
	// gave up after its attempts — counted neither in Ops nor in Errors.
	Failures int64 `json:"failures"`
}

// Expiry is kvbench ttl's figures for a store of sessions with a TTL,
// sampled every second of the measured phase (ttl.go). It is exported only
// so that encoding/json fills it when it reads a report back.
type Expiry struct {
	// Sessions: written in the phase; live, written within the last TTL
	// at the end; held, written less those the sweeper deleted, at the
	// end, and as a multiple of RateTTL, rate × TTL (the sessions a store
	// holds at the steady rate).
	RateTTL    float64 `json:"rate_x_ttl"`
	Written    int64   `json:"written"`
	Live       int64   `json:"live"`
	Held       int64   `json:"held"`
	HeldFactor float64 `json:"held_factor"`
	// ExpiredPerSec and SweptPerSec are the keys the sweeper found
	// expired and deleted per second of the phase (0 with --no-sweep).
	ExpiredPerSec float64 `json:"expired_per_sec"`
	SweptPerSec   float64 `json:"swept_per_sec"`
	Sweeping      bool    `json:"sweeping"`
	// The disk at the end (Stats.Storage.DiskBytes), its tables' and
	// write-ahead logs' part, and DiskFactor: the most disk after the
	// first minute as a multiple of the live sessions' bytes (0: the phase
	// was shorter).
	DiskBytes    int64   `json:"disk_bytes"`
	TableBytes   int64   `json:"table_bytes"`
	WALDiskBytes int64   `json:"wal_disk_bytes"`
	DiskFactor   float64 `json:"disk_factor"`
}

func newResult(workload, scheduler string, c class, group string, s summary) Result {
	return Result{
		Workload:   workload,
		Scheduler:  scheduler,
		Class:      c.String(),
		Group:      group,
		Ops:        s.ops,
		OpsPerSec:  s.opsPerSec,
		P50us:      micros(s.p50),
		P99us:      micros(s.p99),
		P999us:     micros(s.p999),
		MaxUs:      micros(s.max),
		Errors:     s.errors,
		Rows:       s.rows,
		RowsPerSec: s.rowsPerSec,
		firstErr:   s.firstErr,
		Pacing:     newPacing(s),
		Txns:       newTxns(s),
	}
}

// newTxns returns a class of transactions' further figures; nil for
// another.
func newTxns(s summary) *Txns {
	if !s.txn {
		return nil
	}
	return &Txns{Conflicts: s.conflicts, ConflictsPerSec: s.conflictsPerSec, Retries: s.retries, Failures: s.failures}
}

// newPacing returns a paced class's further figures; nil for another.
func newPacing(s summary) *Pacing {
	if s.arrival == "" {
		return nil
	}
	p := &Pacing{
		Arrival:       s.arrival,
		Overdue:       s.overdue,
		ServiceP50us:  micros(s.service.p50),
		ServiceP99us:  micros(s.service.p99),
		ServiceP999us: micros(s.service.p999),
		ServiceMaxUs:  micros(s.service.max),
		LateP50us:     micros(s.late.p50),
		LateP99us:     micros(s.late.p99),
		LateP999us:    micros(s.late.p999),
		LateMaxUs:     micros(s.late.max),
	}
	if s.offered > 0 && !math.IsInf(s.offered, 0) { // JSON has no infinity
		p.OfferedPerSec = s.offered
		p.AchievedPct = s.opsPerSec / s.offered * 100
	}
	return p
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// interruptedMark ends the table rows of a measured phase that was
// interrupted.
const interruptedMark = "(interrupted)"

// writeTable prints the stores' setup if it departs from the defaults
// (writeSetup), then rep's results as one aligned table, the rows of an
// interrupted phase marked so, then the first error of each result that
// had errors. A paced Get class has two rows: "get e2e", its latencies
// from when each Get was due, with its offered rate and the share of it
// achieved, then "get service", its service times. Scans that read rows
// have them per second in rows/s. Transactions have their commits in
// ops/s, and the conflicts they met in conflicts/s, retries and failures.
func writeTable(w io.Writer, rep *Report) error {
	groups, paced, scanned, txns := false, false, false, false
	for _, r := range rep.Results {
		groups = groups || r.Group != ""
		paced = paced || r.Pacing != nil
		scanned = scanned || r.Rows > 0
		txns = txns || r.Txns != nil
	}
	columns := []string{"workload", "scheduler", "class", "group", "ops/s", "offered/s", "achieved", "rows/s",
		"conflicts/s", "retries", "failures", "p50", "p99", "p99.9", "max", "errors"}
	// The columns a table has only when a result fills them.
	drop := map[string]bool{"group": !groups, "rows/s": !scanned, "offered/s": !paced, "achieved": !paced,
		"conflicts/s": !txns, "retries": !txns, "failures": !txns}
	var rows [][]string
	// row takes every column (and a mark after them) and keeps those the
	// table has.
	row := func(cells ...string) {
		var kept []string
		for i, cell := range cells {
			if i >= len(columns) || !drop[columns[i]] {
				kept = append(kept, cell)
			}
		}
		rows = append(rows, kept)
	}
	row(columns...)
	for _, r := range rep.Results {
		class, offered, achieved := r.Class, "", ""
		if p := r.Pacing; p != nil {
			class += " e2e"
			offered, achieved = "-", "-"
			if p.OfferedPerSec > 0 {
				offered, achieved = fmt.Sprintf("%.0f", p.OfferedPerSec), fmt.Sprintf("%.1f%%", p.AchievedPct)
			}
		}
		rowsPerSec := ""
		if r.Rows > 0 {
			rowsPerSec = fmt.Sprintf("%.0f", r.RowsPerSec)
		}
		conflicts, retries, failures := "", "", ""
		if x := r.Txns; x != nil {
			conflicts, retries, failures = fmt.Sprintf("%.0f", x.ConflictsPerSec), fmt.Sprint(x.Retries), fmt.Sprint(x.Failures)
		}
		cells := []string{r.Workload, r.Scheduler, class, r.Group,
			fmt.Sprintf("%.0f", r.OpsPerSec), offered, achieved, rowsPerSec, conflicts, retries, failures,
			formatMicros(r.P50us), formatMicros(r.P99us), formatMicros(r.P999us), formatMicros(r.MaxUs),
			fmt.Sprint(r.Errors)}
		if r.Interrupted {
			cells = append(cells, interruptedMark)
		}
		row(cells...)
		if p := r.Pacing; p != nil {
			for _, sub := range []struct {
				name               string
				p50, p99, p999, mx float64
			}{
				{" service", p.ServiceP50us, p.ServiceP99us, p.ServiceP999us, p.ServiceMaxUs},
				{" late", p.LateP50us, p.LateP99us, p.LateP999us, p.LateMaxUs},
			} {
				cells := []string{r.Workload, r.Scheduler, r.Class + sub.name, r.Group, "", "", "", "", "", "", "",
					formatMicros(sub.p50), formatMicros(sub.p99), formatMicros(sub.p999), formatMicros(sub.mx), ""}
				if r.Interrupted {
					cells = append(cells, interruptedMark)
				}
				row(cells...)
			}
		}
	}
	var b strings.Builder
	writeSetup(&b, rep)
	writeAligned(&b, rows, slices.Index(rows[0], "ops/s"))
	for _, r := range rep.Results {
		if r.firstErr != nil {
			fmt.Fprintf(&b, "%s %s %s: %d errors, the first: %v\n",
				r.Workload, r.Scheduler, r.Class, r.Errors, r.firstErr)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSetup writes, on a line of its own, the stores' setup where it
// departs from the defaults (Report.SimulatedDiskLatencyUs,
// CacheSizeBytes); nothing if it does not. The latency is written as a
// simulated disk's, so that nobody takes the figures for a real disk's.
func writeSetup(b *strings.Builder, rep *Report) {
	var parts []string
	if rep.SimulatedDiskLatencyUs > 0 {
		d := time.Duration(rep.SimulatedDiskLatencyUs * float64(time.Microsecond))
		parts = append(parts, fmt.Sprintf("simulated disk latency %v on every table read "+
			"(a nanosleep in ReadAt; the page cache answers the read: not a real disk)", d))
	}
	if rep.CacheSizeBytes > 0 {
		parts = append(parts, "block cache "+formatBytes(rep.CacheSizeBytes))
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "store: %s\n", strings.Join(parts, ", "))
	}
}

// formatBytes shows a size in bytes in the largest binary unit that
// divides it: "16 MiB", "1000 B".
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// writeAligned writes rows as columns two spaces apart, the first left
// of them aligned left (names) and the rest right (numbers). (text/tabwriter
// would do, but it pads "µs" by its bytes, not its runes.)
func writeAligned(b *strings.Builder, rows [][]string, left int) {
	var widths []int
	for _, r := range rows {
		for i, cell := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, cell := range r {
			if i > 0 {
				line.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			switch {
			case i >= left:
				line.WriteString(pad + cell)
			case i < len(r)-1:
				line.WriteString(cell + pad)
			default:
				line.WriteString(cell)
			}
		}
		// A row that ends in empty cells ends there, not in spaces.
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
}

// formatMicros shows a latency with a unit that keeps it short.
func formatMicros(us float64) string {
	switch {
	case us == 0:
		return "-"
	case us < 1000:
		return fmt.Sprintf("%.0fµs", us)
	case us < 1e6:
		return fmt.Sprintf("%.2fms", us/1e3)
	default:
		return fmt.Sprintf("%.2fs", us/1e6)
	}
}

// writeInterruption prints, under the table, where the run was stopped
// and by what (cause).
func writeInterruption(w io.Writer, stop interruption, cause error) error {
	var msg string
	switch {
	case stop.of == 0:
		msg = fmt.Sprintf("during %s, before it measured anything", stop.phase)
	case stop.elapsed < stop.of:
		msg = fmt.Sprintf("%v into the %v of %s, whose figures, marked %s, cover that part",
			stop.elapsed.Round(time.Millisecond), stop.of, stop.phase, interruptedMark)
	default:
		msg = fmt.Sprintf("at the end of %s", stop.phase)
	}
	_, err := fmt.Fprintf(w, "\ninterrupted (%v) %s\n", cause, msg)
	return err
}

// writeJSON writes rep to path, indented.
func writeJSON(path string, rep *Report) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if err := encodeJSON(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("--json %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--json %s: %w", path, err)
	}
	return nil
}

// encodeJSON writes rep to w, indented.
func encodeJSON(w io.Writer, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

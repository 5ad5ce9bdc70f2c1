package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// report is a run's results, in the JSON shape that scripts compare runs
// by (the kvbench issue fixes it; do not rename the fields).
type report struct {
	Workload  string   `json:"workload"` // the workloads, comma-joined
	Keys      int64    `json:"keys"`
	ValueSize int      `json:"value_size"`
	Workers   int      `json:"workers"`
	DurationS float64  `json:"duration_s"`
	Results   []result `json:"results"`
	// Interrupted: the run was stopped (Ctrl-C) before its end; Results
	// hold what it measured by then.
	Interrupted bool `json:"interrupted,omitempty"`
}

// result is one (workload, scheduler, class, group)'s figures over a
// measured phase. Latencies are in microseconds.
type result struct {
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
	// RUPerSec is, for a resource group's main class, the request units
	// the group consumed per second of the measured phase; absent for
	// workloads without groups.
	RUPerSec float64 `json:"ru_per_sec,omitempty"`
	// Interrupted: the run was stopped during this measured phase, so
	// the figures cover only the part that ran (ops/s over that part).
	Interrupted bool `json:"interrupted,omitempty"`

	firstErr error // shown under the table; not part of the JSON
}

func newResult(workload, scheduler string, c class, group string, s summary) result {
	return result{
		Workload:  workload,
		Scheduler: scheduler,
		Class:     c.String(),
		Group:     group,
		Ops:       s.ops,
		OpsPerSec: s.opsPerSec,
		P50us:     micros(s.p50),
		P99us:     micros(s.p99),
		P999us:    micros(s.p999),
		MaxUs:     micros(s.max),
		Errors:    s.errors,
		firstErr:  s.firstErr,
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// interruptedMark ends the table rows of a measured phase that was
// interrupted.
const interruptedMark = "(interrupted)"

// writeTable prints rep's results as one aligned table, the rows of an
// interrupted phase marked so, then the first error of each result that
// had errors.
func writeTable(w io.Writer, rep *report) error {
	groups := false
	for _, r := range rep.Results {
		groups = groups || r.Group != ""
	}
	var rows [][]string
	row := func(cells ...string) {
		if !groups {
			cells = append(cells[:3], cells[4:]...)
		}
		rows = append(rows, cells)
	}
	row("workload", "scheduler", "class", "group", "ops/s", "p50", "p99", "p99.9", "max", "errors")
	for _, r := range rep.Results {
		cells := []string{r.Workload, r.Scheduler, r.Class, r.Group,
			fmt.Sprintf("%.0f", r.OpsPerSec),
			formatMicros(r.P50us), formatMicros(r.P99us), formatMicros(r.P999us), formatMicros(r.MaxUs),
			fmt.Sprint(r.Errors)}
		if r.Interrupted {
			cells = append(cells, interruptedMark)
		}
		row(cells...)
	}
	var b strings.Builder
	writeAligned(&b, rows, len(rows[0])-6)
	for _, r := range rep.Results {
		if r.firstErr != nil {
			fmt.Fprintf(&b, "%s %s %s: %d errors, the first: %v\n",
				r.Workload, r.Scheduler, r.Class, r.Errors, r.firstErr)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
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
		for i, cell := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			switch {
			case i >= left:
				b.WriteString(pad + cell)
			case i < len(r)-1:
				b.WriteString(cell + pad)
			default:
				b.WriteString(cell)
			}
		}
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
func writeJSON(path string, rep *report) error {
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
func encodeJSON(w io.Writer, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

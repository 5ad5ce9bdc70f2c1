package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/readpool"
)

// noisyWorkload is the headline case: --scanners goroutines loop on long
// scans while --clients goroutines do point Gets at a steady rate. It shows
// whether short reads stay fast beside long ones. Its quiet phase, the
// same Gets without the scans, is what their p99 beside the scans is
// judged against (see writeNoisySummaries).
func noisyWorkload() Workload {
	w := &noisyLoad{}
	w.plain = plain{
		name:    "noisy",
		short:   "point Gets at a steady rate beside long scans (the default)",
		long:    noisyLong,
		classes: []class{classGet, classScan},
		clients: func(e *env) []client {
			return getsBeside(e, &w.beside, func(ctx context.Context, e *env, int64n func(int64) int64, rows *int64) (class, error) {
				return classScan, scanRandom(ctx, e, int64n, w.beside.longScanLen, rows)
			})
		},
	}
	return w
}

const noisyLong = `noisy: --scanners goroutines looping on long scans of --long-scan-len
keys while --clients goroutines do point Gets at a steady rate, to show
what the read pool buys short reads. It is what kvbench runs with no
workload named.

On each scheduler, after the warm-up, a quiet phase first runs the same
Gets alone, without the scans, for --duration (its rows are workload
"noisy-quiet"); then the measured phase runs them beside the scans. Under
the table kvbench prints, per scheduler, the Gets' e2e p99 quiet and
beside the scans and their ratio (want ≤ 3×), the share of the offered
rate achieved beside the scans (want ≥ 98%), and, when fifo and mlfq both
ran, fifo's e2e p99 over mlfq's (want ≥ 10×). --no-quiet skips the quiet
phase.

` + arrivalLong

// arrivalLong explains --arrival, noisy's and cop's.
const arrivalLong = `--arrival says when the Gets are due. "fixed", the default: each Get
client keeps a schedule of its own, its Get i due at i × --think after a
random phase in [0, --think) (from --seed, so that the clients do not fire
together); it sleeps until a Get is due, issues a late one at once and
skips none, so the clients offer --clients / --think Gets per second
however slow the store is. "think": a client's next Get is due --think
after its previous one returned, so a slow store is asked for fewer Gets
and its latency looks better than a steady load would find it
("coordinated omission"). Either way a Get's latency counts from when it
was due, not from when the client got to issue it: under fixed arrival a
store that falls behind its schedule shows it in the latency (and keeps
falling behind for the rest of the phase). Each such Get class has two
rows in the table: "get e2e", from when each Get was due to its return,
with offered/s (the Gets per second asked for) and achieved (the Gets
completed per second, as a share of offered/s); and "get service", from
each Get's call to its return. In the JSON the e2e figures are p50_us ...
max_us, beside arrival, offered_per_sec, achieved_pct and service_p50_us
... service_max_us.`

type noisyLoad struct {
	plain
	beside  besideFlags
	noQuiet bool // skip the quiet phase

	// waits are, with --max-queue-wait, what each scheduler's pool counted
	// of the limited Gets in the measured phase beside the scans.
	mu     sync.Mutex
	before readpool.WaitStats
	waits  map[string]readpool.WaitStats
}

func (w *noisyLoad) Flags(fs *pflag.FlagSet) {
	w.beside.add(fs, "long scans")
	fs.BoolVar(&w.noQuiet, "no-quiet", false, "skip the quiet phase, the Get clients alone for --duration before the measured phase, "+
		"whose Get p99 the p99 beside the scans is judged against")
}

func (w *noisyLoad) Validate() error { return w.beside.validate() }

// Phases are a warm-up, then, unless --no-quiet, the quiet phase, its
// Gets alone, then the measured phase. The quiet phase follows the
// warm-up directly, so that it finds the store as warm as the measured
// phase does; it runs for --duration, as the measured phase does, so
// that the two Get p99s rest on as many Gets.
func (w *noisyLoad) Phases() []Phase {
	ps := w.phases()
	if w.beside.maxWait > 0 {
		m := &ps[1]
		m.Classes = append(slices.Clone(m.Classes), classRefused)
		m.Before = func(st kv.Store) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.before = waitsOf(st)
			return nil
		}
		m.After = func(st kv.Store, ms *Measured) {
			now := waitsOf(st)
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.waits == nil {
				w.waits = map[string]readpool.WaitStats{}
			}
			b := w.before
			w.waits[ms.sched] = readpool.WaitStats{Refused: now.Refused - b.Refused, Started: now.Started - b.Started,
				WithinLimit: now.WithinLimit - b.WithinLimit, WithinEstimate: now.WithinEstimate - b.WithinEstimate}
		}
	}
	if w.noQuiet {
		return ps
	}
	quiet := Phase{Section: w.name, Label: w.name + " quiet", Stream: streamQuietMeasure,
		Clients:  func(e *env) []client { return pacedGetClients(e, &w.beside) },
		Workload: w.name + quietSuffix, Classes: []class{classGet}}
	return []Phase{ps[0], quiet, ps[1]}
}

func (w *noisyLoad) Summarize(out io.Writer, rep *Report) error {
	if err := writeNoisySummaries(out, w.name, w.beside.scanners, rep); err != nil {
		return err
	}
	return w.writeWaits(out, rep)
}

// maxWaitWithin is the share of the Gets admitted with --max-queue-wait
// that must start within it, in percent (the aim).
const maxWaitWithin = 90.0

// writeWaits prints, with --max-queue-wait, per scheduler: the Gets
// refused for their estimated wait and how fast the refusal came (the
// "get refused" class's p99), and of those admitted the share that
// started within the limit and within their estimate.
func (w *noisyLoad) writeWaits(out io.Writer, rep *Report) error {
	if w.beside.maxWait <= 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, s := range slices.Sorted(maps.Keys(w.waits)) {
		ws := w.waits[s]
		refusedP99 := "-"
		if i := slices.IndexFunc(rep.Results, func(r Result) bool {
			return r.Workload == w.name && r.Scheduler == s && r.Class == classRefused.String()
		}); i >= 0 && rep.Results[i].Ops > 0 {
			refusedP99 = formatMicros(rep.Results[i].P99us)
		}
		pct := func(n int64) float64 {
			if ws.Started == 0 {
				return 0
			}
			return 100 * float64(n) / float64(ws.Started)
		}
		fmt.Fprintf(&b, "%s %s: --max-queue-wait %v: %d Gets refused (service p99 %s); of %d admitted, %.1f%% started within the limit (want ≥ %g%%): %s, %.1f%% within their estimate\n",
			w.name, s, w.beside.maxWait, ws.Refused, refusedP99, ws.Started, pct(ws.WithinLimit), maxWaitWithin,
			verdict(ws.Started > 0 && pct(ws.WithinLimit) >= maxWaitWithin), pct(ws.WithinEstimate))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// quietSuffix ends the workload name of the results of a quiet phase.
const quietSuffix = "-quiet"

// besideFlags are the flags of the workloads whose paced Gets run beside
// long reads (noisy, cop, cop-scan).
type besideFlags struct {
	clients     clientsFlag
	scanners    int           // goroutines looping on long reads
	longScanLen int           // keys per long read, capped at --keys
	think       time.Duration // one Get client's interval between Gets
	arrival     string        // when the Get clients' Gets are due, arrivalFixed or arrivalThink
	maxWait     time.Duration // --max-queue-wait: each Get's kv.WithMaxQueueWait, 0 = none
}

// add registers the flags; long says what the long reads are.
func (f *besideFlags) add(fs *pflag.FlagSet, long string) {
	f.clients.add(fs, "client goroutines doing paced point Gets")
	fs.IntVar(&f.scanners, "scanners", 8, "goroutines looping on "+long)
	fs.IntVar(&f.longScanLen, "long-scan-len", 100_000, "keys per one of the "+long+" (at most --keys)")
	fs.DurationVar(&f.think, "think", 200*time.Microsecond, "one Get client's interval: between two Gets due (--arrival fixed) or after one returns (--arrival think); "+
		"the clients offer --clients / --think Gets per second")
	fs.StringVar(&f.arrival, "arrival", arrivalFixed, "when each Get client's Gets are due, "+strings.Join(arrivals, " or ")+
		": fixed, on a schedule of the client's own (Get i at i × --think after a random phase), a late Get issued at once, none skipped; "+
		"think, --think after the previous Get returned. Latency counts from when a Get was due")
	fs.DurationVar(&f.maxWait, "max-queue-wait", 0, "each Get carries kv.WithMaxQueueWait of this: one whose estimated wait for a worker exceeds it fails at once "+
		"with ErrBusy (counted in the Gets' errors; its service time in the class \"get refused\"); 0 = no limit")
}

func (f *besideFlags) validate() error {
	errs := []error{f.clients.validate(1, "")}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if f.scanners < 0 {
		bad("--scanners must not be negative, not %d", f.scanners)
	}
	if f.longScanLen < 1 {
		bad("--long-scan-len must be at least 1, not %d", f.longScanLen)
	}
	if f.think < 0 {
		bad("--think must not be negative, not %v", f.think)
	}
	if f.maxWait < 0 {
		bad("--max-queue-wait must not be negative, not %v", f.maxWait)
	}
	if !slices.Contains(arrivals, f.arrival) {
		bad("unknown --arrival %q (known: %s)", f.arrival, strings.Join(arrivals, ", "))
	} else if f.arrival == arrivalFixed && f.think == 0 {
		bad("--think 0 with --arrival fixed would make every Get due at once; give --arrival think for Gets back to back")
	}
	return errors.Join(errs...)
}

// getsBeside returns the clients of noisy, cop or cop-scan, with long as
// the long read: --clients goroutines doing paced Gets (pacedGets) on the
// schedules of --arrival (getSchedule) and --scanners goroutines looping
// on long, each with a random stream of its own, from which long draws
// its start. long counts the rows it reads into *rows (countRows), if
// it reads them itself.
func getsBeside(e *env, f *besideFlags, long func(ctx context.Context, e *env, int64n func(int64) int64, rows *int64) (class, error)) []client {
	cs := pacedGetClients(e, f)
	for i := range f.scanners {
		r := e.rand(f.clients.n + i)
		cs = append(cs, countRows(func(ctx context.Context, rows *int64) (class, error) { return long(ctx, e, r.Int64N, rows) }))
	}
	return cs
}

// pacedGetClients returns the Get clients of f: --clients goroutines
// doing paced Gets (pacedGets) on the schedules of --arrival
// (getSchedule), with random streams 0 to --clients-1.
func pacedGetClients(e *env, f *besideFlags) []client {
	cs := make([]client, f.clients.n)
	for i := range cs {
		// The phase comes from a stream apart from the client's keys', so
		// that --arrival does not change which keys it reads.
		cs[i] = pacedGets(e, i, getSchedule(f, newRand(e.seed, uint64(i), offsetStream), i))
	}
	return cs
}

// The aims of a workload with a quiet phase (noisy), which the lines under
// the table mark ok or missed. They are the issue's, for a real run on an
// idle machine; tests do not assert them.
const (
	// quietFactor: the Gets' e2e p99 beside the scans is at most this
	// many times their p99 in the quiet phase of the same run.
	quietFactor = 3.0
	// achievedMinPct: beside the scans, the Gets complete at least this
	// share of the rate they are offered, in percent.
	achievedMinPct = 98.0
	// fifoOverMLFQ: the Gets' e2e p99 beside the scans on fifo is at
	// least this many times theirs on mlfq.
	fifoOverMLFQ = 10.0
)

// writeNoisySummaries prints, for the workload name in rep (noisy), a
// line per scheduler comparing its Gets' e2e p99 beside the scanners
// scans with their p99 in the quiet phase, if it ran; a line per
// scheduler with the share of the offered rate achieved beside the scans;
// and, if it ran on both, how fifo's p99 compares with mlfq's.
func writeNoisySummaries(w io.Writer, name string, scanners int, rep *Report) error {
	var b strings.Builder
	get := classGet.String()
	{
		find := func(workload, sched string) (Result, bool) {
			i := slices.IndexFunc(rep.Results, func(r Result) bool {
				return r.Workload == workload && r.Scheduler == sched && r.Class == get && r.Group == ""
			})
			if i < 0 {
				return Result{}, false
			}
			return rep.Results[i], true
		}
		var scheds []string // those it ran on, in the table's order
		for _, r := range rep.Results {
			if r.Workload == name && r.Class == get && !slices.Contains(scheds, r.Scheduler) {
				scheds = append(scheds, r.Scheduler)
			}
		}
		for _, s := range scheds {
			beside, _ := find(name, s)
			if b.Len() == 0 {
				b.WriteByte('\n')
			}
			if quiet, ok := find(name+quietSuffix, s); ok {
				factor, ok := p99Ratio(beside.P99us, quiet.P99us)
				fmt.Fprintf(&b, "%s %s: get e2e p99 %s quiet, %s beside %d scanners = %s (want ≤ %g×): %s\n",
					name, s, formatMicros(quiet.P99us), formatMicros(beside.P99us), scanners,
					formatRatio(factor, ok), quietFactor, verdict(ok && factor <= quietFactor))
			}
			// Under think arrival "offered" is what a store of no service
			// time would get: falling short of it is no verdict.
			if p := beside.Pacing; p != nil && p.OfferedPerSec > 0 && p.Arrival == arrivalFixed {
				fmt.Fprintf(&b, "%s %s: achieved %.1f%% of the offered rate beside the scanners (want ≥ %g%%): %s\n",
					name, s, p.AchievedPct, achievedMinPct, verdict(p.AchievedPct >= achievedMinPct))
			}
		}
		fifo, okFIFO := find(name, "fifo")
		mlfq, okMLFQ := find(name, "mlfq")
		if okFIFO && okMLFQ {
			ratio, ok := p99Ratio(fifo.P99us, mlfq.P99us)
			fmt.Fprintf(&b, "%s: fifo e2e p99 %s ÷ mlfq e2e p99 %s = %s (want ≥ %g×): %s\n",
				name, formatMicros(fifo.P99us), formatMicros(mlfq.P99us),
				formatRatio(ratio, ok), fifoOverMLFQ, verdict(ok && ratio >= fifoOverMLFQ))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// p99Ratio returns num ÷ den, two p99s in µs, and whether it means
// anything: false if either is 0 (a class that recorded nothing).
func p99Ratio(num, den float64) (float64, bool) {
	if num <= 0 || den <= 0 {
		return 0, false
	}
	return num / den, true
}

// formatRatio shows a ratio of p99Ratio, "-" if it means nothing.
func formatRatio(r float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f×", r)
}

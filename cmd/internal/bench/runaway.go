package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// runawayWorkload shows what a runaway rule buys the well-behaved reads:
// paced Gets and short scans, first alone, then beside --scanners
// goroutines scanning the whole store with no rule, then with the rule.
func runawayWorkload() Workload {
	w := &runawayLoad{}
	w.plain = plain{
		name:    "runaway",
		short:   "paced Gets and short scans beside whole-store scans, without and with a runaway rule",
		long:    runawayLong,
		classes: []class{classGet, classScan, classFullScan},
	}
	return w
}

const runawayLong = `runaway: --clients goroutines doing paced point Gets (as noisy's) and
--short-scanners goroutines scanning --short-scan-len keys with a pause of
--short-think after each,
beside --scanners goroutines each scanning the whole store from its first
key, again and again; a whole scan that fails (killed) is retried after
--retry-after, as a client would.

On each scheduler, after the warm-up (no rule), three phases of --duration:
"runaway-quiet", the well-behaved reads alone; "runaway-norule", beside the
whole scans with no runaway rule; and "runaway", beside them under the rule
--action past --exec of worker time (and --rows, if given), with a watch of
--watch. Under resource control (the priority scheduler) the rule is the
default group's (resource.GroupConfig.Runaway), else the store's
(kv.DB.SetRunaway). Under the table, per scheduler: the Gets' e2e p99 in
each phase and the rule's over the quiet one's (want ≤ 1.5× with kill, ≤ 2×
with cooldown), and the reads each action caught in the rule's phase.

` + arrivalLong

type runawayLoad struct {
	plain
	beside       besideFlags
	shortScans   int           // goroutines scanning shortScanLen keys back to back
	shortScanLen int           // keys per short scan
	shortThink   time.Duration // a short scanner's pause after each scan
	retryAfter   time.Duration // a whole scan's pause after it failed
	action       string
	exec         time.Duration
	rows         int64
	watch        time.Duration

	// caught are the runaway reads each phase saw, by scheduler and
	// workload column, from the store's counts (After).
	mu     sync.Mutex
	before map[string]resource.RunawayGroupStats
	caught map[[2]string]resource.RunawayGroupStats
}

func (w *runawayLoad) Flags(fs *pflag.FlagSet) {
	w.beside.add(fs, "scans of the whole store")
	fs.IntVar(&w.shortScans, "short-scanners", 2, "goroutines scanning --short-scan-len keys from random starts, back to back")
	fs.IntVar(&w.shortScanLen, "short-scan-len", 100, "keys per short scan")
	fs.DurationVar(&w.shortThink, "short-think", time.Millisecond, "a short scanner's pause after each of its scans: well-behaved reads leave the CPU room")
	fs.DurationVar(&w.retryAfter, "retry-after", 10*time.Millisecond, "a whole scan that failed (killed) is tried again after this")
	fs.StringVar(&w.action, "action", string(resource.RunawayKill), "the rule's action: kill, cooldown or dryrun")
	fs.DurationVar(&w.exec, "exec", 10*time.Millisecond, "the rule's ExecElapsed: a read past this much worker time is runaway (0 = no limit on time)")
	fs.Int64Var(&w.rows, "rows", 0, "the rule's RowsScanned: a read past this many rows is runaway (0 = no limit on rows)")
	fs.DurationVar(&w.watch, "watch", time.Minute, "the rule's Watch: for this long the same read (its start key) is runaway from its first step (0 = no watch)")
}

// rule is the runaway rule of the flags.
func (w *runawayLoad) rule() *resource.RunawayRule {
	return &resource.RunawayRule{ExecElapsed: w.exec, RowsScanned: w.rows, Action: resource.RunawayAction(strings.ToLower(w.action)), Watch: w.watch}
}

func (w *runawayLoad) Validate() error {
	errs := []error{w.beside.validate()}
	if w.shortScans < 0 {
		errs = append(errs, fmt.Errorf("--short-scanners must not be negative, not %d", w.shortScans))
	}
	if w.shortScanLen < 1 {
		errs = append(errs, fmt.Errorf("--short-scan-len must be at least 1, not %d", w.shortScanLen))
	}
	if w.shortThink < 0 {
		errs = append(errs, fmt.Errorf("--short-think must not be negative, not %v", w.shortThink))
	}
	if w.retryAfter < 0 {
		errs = append(errs, fmt.Errorf("--retry-after must not be negative, not %v", w.retryAfter))
	}
	if err := w.rule().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--action, --exec, --rows, --watch: %w", err))
	}
	return errors.Join(errs...)
}

// Schedulers: direct has no steps, so no rule can apply to its reads.
func (w *runawayLoad) Schedulers(asked []string) []string {
	return slices.DeleteFunc(slices.Clone(asked), func(s string) bool { return s == string(kv.SchedulerDirect) })
}

// setRule puts rule (nil: none) on st: the default group's under resource
// control, the store's otherwise.
func setRule(st kv.Store, rule *resource.RunawayRule) error {
	db, ok := st.(*kv.DB)
	if !ok {
		return fmt.Errorf("runaway rules need the embedded store, not %T", st)
	}
	if db.Options().ResourceControl {
		g, _ := db.ResourceGroups().Get(resource.DefaultGroup)
		g.Runaway = rule
		return db.ResourceGroups().Put(g)
	}
	return db.SetRunaway(rule)
}

// runawayCounts are st's runaway counts of the default group.
func runawayCounts(st kv.Store) resource.RunawayGroupStats {
	db, ok := st.(*kv.DB)
	if !ok {
		return resource.RunawayGroupStats{}
	}
	if rs := db.Stats().Runaway; rs != nil {
		for _, g := range rs.Groups {
			if g.Group == resource.DefaultGroup {
				return g
			}
		}
	}
	return resource.RunawayGroupStats{}
}

// Phases: a warm-up and the quiet phase without the whole scans, then the
// whole scans without the rule and with it.
func (w *runawayLoad) Phases() []Phase {
	noRule := func(st kv.Store) error { return setRule(st, nil) }
	withRule := func(st kv.Store) error { return setRule(st, w.rule()) }
	phase := func(suffix string, stream uint64, full bool, before func(kv.Store) error) Phase {
		classes := []class{classGet, classScan}
		if full {
			classes = append(classes, classFullScan)
		}
		if w.beside.maxWait > 0 {
			classes = append(classes, classRefused)
		}
		return Phase{Section: w.name, Label: w.name + strings.ReplaceAll(suffix, "-", " "), Stream: stream,
			Clients: func(e *env) []client { return w.clients(e, full) }, Workload: w.name + suffix, Classes: classes,
			Before: func(st kv.Store) error {
				w.mu.Lock()
				if w.before == nil {
					w.before = map[string]resource.RunawayGroupStats{}
				}
				w.before[suffix] = runawayCounts(st)
				w.mu.Unlock()
				return before(st)
			},
			After: func(st kv.Store, m *Measured) {
				now := runawayCounts(st)
				w.mu.Lock()
				defer w.mu.Unlock()
				was := w.before[suffix]
				if w.caught == nil {
					w.caught = map[[2]string]resource.RunawayGroupStats{}
				}
				w.caught[[2]string{m.sched, m.workload}] = resource.RunawayGroupStats{DryRun: now.DryRun - was.DryRun,
					Cooldown: now.Cooldown - was.Cooldown, Kill: now.Kill - was.Kill, Watched: now.Watched - was.Watched}
			}}
	}
	warm := Phase{Section: w.name, Label: w.name, Warmup: true, Stream: streamWarmup,
		Clients: func(e *env) []client { return w.clients(e, true) }, Before: noRule}
	return []Phase{
		warm,
		phase(quietSuffix, streamQuietMeasure, false, noRule),
		phase(noRuleSuffix, streamMeasure, true, noRule),
		phase("", streamMeasure, true, withRule),
	}
}

// noRuleSuffix ends the workload name of the phase without a rule.
const noRuleSuffix = "-norule"

// clients are the paced Gets, the short scans and, with full, the whole
// scans.
func (w *runawayLoad) clients(e *env, full bool) []client {
	cs := pacedGetClients(e, &w.beside)
	for i := range w.shortScans {
		r := e.rand(w.beside.clients.n + i)
		cs = append(cs, countRows(func(ctx context.Context, rows *int64) (class, error) {
			err := scanRandom(ctx, e, r.Int64N, w.shortScanLen, rows)
			pause(ctx, w.shortThink)
			return classScan, err
		}))
	}
	if !full {
		return cs
	}
	for range w.beside.scanners {
		cs = append(cs, countRows(func(ctx context.Context, rows *int64) (class, error) {
			n := int(e.keys.count())
			err := scan(ctx, e.db, 0, n, int64(n), rows)
			if err != nil {
				pause(ctx, w.retryAfter)
			}
			return classFullScan, err
		}))
	}
	return cs
}

// The aims of the runaway workload, which the lines under the table mark
// ok or missed: the Gets' e2e p99 beside the whole scans under the rule,
// over their p99 alone. The issue's, for a real run on an idle machine.
const (
	runawayKillFactor     = 1.5
	runawayCooldownFactor = 2.0
)

func (w *runawayLoad) Summarize(out io.Writer, rep *Report) error {
	var b strings.Builder
	get := classGet.String()
	find := func(workload, sched string) (Result, bool) {
		i := slices.IndexFunc(rep.Results, func(r Result) bool {
			return r.Workload == workload && r.Scheduler == sched && r.Class == get
		})
		if i < 0 {
			return Result{}, false
		}
		return rep.Results[i], true
	}
	var scheds []string
	for _, r := range rep.Results {
		if r.Workload == w.name && !slices.Contains(scheds, r.Scheduler) {
			scheds = append(scheds, r.Scheduler)
		}
	}
	want := map[resource.RunawayAction]float64{resource.RunawayKill: runawayKillFactor, resource.RunawayCooldown: runawayCooldownFactor}
	a := w.rule().Action
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range scheds {
		quiet, okQ := find(w.name+quietSuffix, s)
		norule, okN := find(w.name+noRuleSuffix, s)
		rule, okR := find(w.name, s)
		if !okQ || !okR {
			continue
		}
		if b.Len() == 0 {
			b.WriteByte('\n')
		}
		ratio, ok := p99Ratio(rule.P99us, quiet.P99us)
		line := fmt.Sprintf("%s %s: get e2e p99 %s alone", w.name, s, formatMicros(quiet.P99us))
		if okN {
			r, okr := p99Ratio(norule.P99us, quiet.P99us)
			line += fmt.Sprintf(", %s beside %d whole scans (%s)", formatMicros(norule.P99us), w.beside.scanners, formatRatio(r, okr))
		}
		line += fmt.Sprintf(", %s under %s = %s", formatMicros(rule.P99us), w.rule(), formatRatio(ratio, ok))
		if f, aimed := want[a]; aimed {
			line += fmt.Sprintf(" (want ≤ %g×): %s", f, verdict(ok && ratio <= f))
		}
		b.WriteString(line + "\n")
		c := w.caught[[2]string{s, w.name}]
		fmt.Fprintf(&b, "%s %s: the rule caught %d reads (dryrun %d, cooldown %d, kill %d), %d of them by its watch\n",
			w.name, s, c.DryRun+c.Cooldown+c.Kill, c.DryRun, c.Cooldown, c.Kill, c.Watched)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// waitsOf are st's pool's figures of the reads with a --max-queue-wait;
// zero for a store without a pool.
func waitsOf(st kv.Store) readpool.WaitStats {
	if db, ok := st.(*kv.DB); ok {
		if p := db.Stats().Pool; p != nil {
			return p.Waits
		}
	}
	return readpool.WaitStats{}
}

// pause waits d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) {
	if d <= 0 || ctx.Err() != nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// Workload is one kind of load: what its clients do, its own flags, its
// phases on each store, and what it says about the results. The engine
// (Run) loads the store, runs the phases on each scheduler's store —
// warm-up, measure, stop on interruption — and reports them; a workload
// never drives a phase itself.
//
// The workloads are this package's (Workloads); a binary picks one, binds
// its flags and runs it on the kv.Store its Stores open.
type Workload interface {
	// Name is its subcommand and the workload column of its results.
	Name() string
	// Short is one line for a list of the workloads; Long explains it.
	Short() string
	Long() string
	// Flags registers its own flags on fs, bound to it.
	Flags(fs *pflag.FlagSet)
	// Validate reports every problem with those flags at once, joined
	// (errors.Join), or nil; it is called only when the workload runs.
	Validate() error
	// Schedulers are the schedulers it runs on when the run asks for
	// asked: asked itself, unless it needs one of its own.
	Schedulers(asked []string) []string
	// Rows reports whether it reads the store's values as coprocessor
	// rows: the load then writes rows (see valueMaker).
	Rows() bool
	// Setup prepares a store just opened, before its phases (groups
	// creates its resource groups there).
	Setup(st kv.Store) error
	// Phases are what runs on each store, in order.
	Phases() []Phase
	// Check is the workload's verdict on a phase it ran, warm-ups
	// included: an error fails the run (soak: the store gave a wrong
	// answer). Operation errors are counted in the results, not here.
	Check(m *Measured) error
	// Summarize writes the lines under the table about rep, the run's
	// results (those of an interrupted run may be missing).
	Summarize(w io.Writer, rep *Report) error
}

// Phase is one phase a workload runs on a store: a warm-up, unmeasured,
// lasting --warmup (none when that is 0), or a measured phase, lasting
// --duration.
type Phase struct {
	// Section is the workload its results are reported under (the table
	// and the JSON keep a section's results together, in the order the
	// sections first appear, each scheduler's after the other) and whose
	// random choices it draws, with Stream: the same section and stream,
	// the same choices on every scheduler.
	Section string
	// Label names it in progress lines and errors, after the scheduler:
	// "noisy", "noisy quiet"; a warm-up adds " warm-up".
	Label  string
	Warmup bool
	Stream uint64
	// Clients builds its client loops.
	Clients func(e *env) []client

	// What a measured phase reports. Workload is its results' workload
	// column, "" = Section; Classes are its results, one per class with
	// every client's recorded merged, in this order. Results, if set,
	// makes them instead (groups: a result per group).
	Workload string
	Classes  []class
	Results  func(m *Measured) []Result

	// RU: measure what each resource group consumes in the phase
	// (Measured.RUPerSec); the store must have resource groups (see
	// groupStore).
	RU bool

	// Before, if set, prepares the store for the phase (runaway sets its
	// rule), warm-up or measured; After, if set, sees the store when a
	// measured phase has ended, before the next phase's Before (runaway
	// reads the store's counts).
	Before func(st kv.Store) error
	After  func(st kv.Store, m *Measured)
}

// client runs operations until ctx is done, recording each in rec, which
// is its own.
type client func(ctx context.Context, rec *recorder)

// env is what the clients of one phase share.
type env struct {
	db   kv.Store
	keys *keySpace
	cfg  *Config
	seed uint64 // the phase's seed: same section and phase, same choices
}

// rand returns client i's generator for this phase.
func (e *env) rand(i int) *rand.Rand { return newRand(e.seed, uint64(i)) }

// groupStore is a store with resource groups (*kv.DB): the groups
// workloads need one, and a phase with Phase.RU reads its groups' RU.
type groupStore interface {
	ResourceGroups() *resource.Manager
}

// Workloads returns every workload, each with its flags' defaults, in
// the order a list of them shows: a fresh set per call, so that each
// command binds flags of its own.
func Workloads() []Workload {
	return []Workload{
		getWorkload(),
		scanWorkload(),
		multiGetWorkload(),
		noisyWorkload(),
		copScanWorkload(),
		copWorkload(),
		groupsWorkload(),
		groupsStepsWorkload(),
		soakWorkload(),
		txnWorkload(),
		runawayWorkload(),
		ttlWorkload(),
	}
}

// plain is what most workloads share: one section, its name, and on
// each store a warm-up and a measured phase of the same clients, whose
// classes it reports; no flags, no setup, no verdict, no summary. A
// workload embeds it and overrides what it has.
type plain struct {
	name, short, long string
	classes           []class
	rows              bool
	clients           func(e *env) []client
}

func (p *plain) Name() string                       { return p.name }
func (p *plain) Short() string                      { return p.short }
func (p *plain) Long() string                       { return p.long }
func (p *plain) Flags(*pflag.FlagSet)               {}
func (p *plain) Validate() error                    { return nil }
func (p *plain) Schedulers(asked []string) []string { return asked }
func (p *plain) Rows() bool                         { return p.rows }
func (p *plain) Setup(kv.Store) error               { return nil }
func (p *plain) Check(*Measured) error              { return nil }
func (p *plain) Summarize(io.Writer, *Report) error { return nil }
func (p *plain) Phases() []Phase                    { return p.phases() }

// phases are p's warm-up and measured phase.
func (p *plain) phases() []Phase {
	return []Phase{
		{Section: p.name, Label: p.name, Warmup: true, Stream: streamWarmup, Clients: p.clients},
		{Section: p.name, Label: p.name, Stream: streamMeasure, Clients: p.clients, Classes: p.classes},
	}
}

// Random streams of the phases: the same section gets the same choices on
// every scheduler, and its warm-up different ones from its measured phase.
const (
	streamWarmup  = 1
	streamMeasure = 2
	// A groups workload's phase with one group alone, before the others.
	streamAloneWarmup  = 3
	streamAloneMeasure = 4
	// noisy's quiet phase, after its warm-up.
	streamQuietMeasure = 5
)

// Measured is what one phase's clients did.
type Measured struct {
	sched    string        // the scheduler of its store
	workload string        // its results' workload column (Phase.Workload)
	recs     []*recorder   // each client's own, in the order of the clients
	elapsed  time.Duration // how long the phase lasted
	// ruPerSec is, for a phase that asked (Phase.RU), the RU each group
	// consumed per second of the phase: the difference of two snapshots of its total,
	// taken when the clients start and when the phase ends, over the time
	// between them. nil for another phase.
	ruPerSec map[string]float64
	// interrupted: the run's context ended before the phase's time was
	// up, so its figures cover only elapsed.
	interrupted bool
	// overrun is how long its clients took to stop after it ended: an
	// operation that does not end with its context (a store stuck in its
	// retries) shows here.
	overrun time.Duration
}

// merged returns, per class, what the clients recorded in all.
func (p *Measured) merged() *recorder { return mergeRecorders(p.recs) }

// runPhase runs clients on db for d (or until ctx is done: the phase is
// then interrupted) and returns what they recorded and, if groups is not
// nil, what each of its resource groups consumed. An operation still
// running when the phase ends is cancelled and not counted.
func runPhase(ctx context.Context, groups groupStore, clients []client, d time.Duration) *Measured {
	ctx, cancel := context.WithTimeoutCause(ctx, d, errPhaseOver)
	defer cancel()
	p := &Measured{recs: make([]*recorder, len(clients))}
	controlled := groups != nil
	var before map[string]float64
	if controlled {
		before = groupRU(groups)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range clients {
		p.recs[i] = &recorder{}
		wg.Go(func() { c(ctx, p.recs[i]) })
	}
	// The phase ends at the deadline, not when the last client has noticed:
	// the second snapshot is taken there, so that the groups' RU cover the
	// same window as their operations do.
	<-ctx.Done()
	end := time.Now()
	// The cause is errPhaseOver if the deadline came first, the run's
	// context's cause if that ended first.
	p.interrupted = !errors.Is(context.Cause(ctx), errPhaseOver)
	if controlled {
		after := groupRU(groups)
		window := max(end.Sub(start), time.Nanosecond).Seconds()
		p.ruPerSec = make(map[string]float64, len(after))
		for g, ru := range after {
			p.ruPerSec[g] = (ru - before[g]) / window
		}
	}
	wg.Wait()
	p.overrun = time.Since(end)
	p.elapsed = min(end.Sub(start), d)
	return p
}

// groupRU returns each resource group's RU consumed so far.
func groupRU(db groupStore) map[string]float64 {
	stats := db.ResourceGroups().Stats()
	ru := make(map[string]float64, len(stats))
	for _, g := range stats {
		ru[g.Name] = g.RU
	}
	return ru
}

// closedLoop returns a client that runs op back to back, each timed from
// its own start.
func closedLoop(op func(ctx context.Context) (class, error)) client { return thinkLoop(0, op) }

// thinkLoop is closedLoop with a pause of think (if positive) between two
// operations: each operation is timed from its own start, the pauses are
// not.
func thinkLoop(think time.Duration, op func(ctx context.Context) (class, error)) client {
	return func(ctx context.Context, rec *recorder) {
		var timer *time.Timer
		if think > 0 {
			timer = time.NewTimer(think)
			defer timer.Stop()
		}
		for ctx.Err() == nil {
			start := time.Now()
			c, err := op(ctx)
			if ctx.Err() != nil {
				return // the phase ended during op
			}
			rec.record(c, time.Since(start), err)
			if timer == nil {
				continue
			}
			timer.Reset(think)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		}
	}
}

// countRows returns a client that runs op back to back, as closedLoop
// does, and adds the rows each run of it read (op counts them into rows)
// to the class it returns — the run that the phase's end cut off
// included, whose latency is not recorded, so that scans longer than the
// phase (a whole store on a slow disk) still show how fast they read.
func countRows(op func(ctx context.Context, rows *int64) (class, error)) client {
	return func(ctx context.Context, rec *recorder) {
		closedLoop(func(ctx context.Context) (class, error) {
			var rows int64
			c, err := op(ctx, &rows)
			rec.addRows(c, rows) // rec is this client's: op ran on its goroutine
			return c, err
		})(ctx, rec)
	}
}

// get reads key n.
func get(ctx context.Context, db kv.Store, buf []byte, n int64) error {
	_, err := db.Get(ctx, appendKey(buf[:0], n))
	return err
}

// scan reads up to n keys from key number start, counting them into
// *read as it goes (a scan cut off still tells how far it got), and
// checks that it saw at least want of them (the keys known to exist
// there).
func scan(ctx context.Context, db kv.Store, start int64, n int, want int64, read *int64) error {
	// A fresh start key: the scan's task may hold it until it ends.
	it := db.Scan(ctx, appendKey(nil, start), nil, &kv.ScanOptions{Limit: n})
	rows := int64(0)
	for it.Next() {
		rows++
	}
	*read += rows
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err == nil && rows < want {
		err = fmt.Errorf("scan from %s: %d rows, want %d", appendKey(nil, start), rows, want)
	}
	return err
}

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/coopkv/coopkv/kv"
)

// workload is a named mix of operations, run by a set of client
// goroutines for one phase at a time.
type workload struct {
	name    string
	classes []class // the classes it reports, in table order
	// clients builds one phase's client loops.
	clients func(e *env) []client
	// groups, when set, makes it a resource-group workload (clients is
	// then nil): it runs once, under resource control, whatever the
	// schedulers (see runGroups).
	groups *groupsSpec
	// rows: it reads the store's values as coprocessor rows, so a run
	// with it loads rows (see valueMaker).
	rows bool
	// baseline, when set, names the workload that this one is compared
	// with: a run of this one measures it too, just before, on each
	// scheduler (config.validate adds it), and a line under the table
	// compares their Get p99s (see writeComparisons).
	baseline string
	// quiet, when set, builds the clients of its quiet phase: its Get
	// clients alone, without what they run beside. On each scheduler,
	// unless --no-quiet, the quiet phase is measured after the warm-up and
	// before the workload's own measured phase; its results are those of
	// workload name+quietSuffix, and a line under the table compares the
	// Gets' p99 in the two (see writeNoisySummaries).
	quiet func(e *env) []client
}

// quietSuffix ends the workload name of the results of a quiet phase.
const quietSuffix = "-quiet"

// client runs operations until ctx is done, recording each in rec, which
// is its own.
type client func(ctx context.Context, rec *recorder)

// env is what the clients of one phase share.
type env struct {
	db   *kv.DB
	cfg  *config
	keys *keySpace
	seed uint64 // the phase's seed: same workload and phase, same choices
}

// rand returns client i's generator for this phase.
func (e *env) rand(i int) *rand.Rand { return newRand(e.seed, uint64(i)) }

// workloadList is every workload kvbench knows, in the order --help
// lists them.
var workloadList = []*workload{
	getWorkload(),
	scanWorkload(),
	multiGetWorkload(),
	noisyWorkload(),
	copScanWorkload(),
	copWorkload(),
	groupsWorkload(),
	groupsStepsWorkload(),
	soakWorkload(),
}

func lookupWorkload(name string) (*workload, bool) {
	for _, w := range workloadList {
		if w.name == name {
			return w, true
		}
	}
	return nil, false
}

func workloadNames() []string {
	names := make([]string, len(workloadList))
	for i, w := range workloadList {
		names[i] = w.name
	}
	return names
}

// phase is what one phase's clients did.
type phase struct {
	recs    []*recorder   // each client's own, in the order of the clients
	elapsed time.Duration // how long the phase lasted
	// ruPerSec is, under resource control, the RU each group consumed per
	// second of the phase: the difference of two snapshots of its total,
	// taken when the clients start and when the phase ends, over the time
	// between them. nil without resource control.
	ruPerSec map[string]float64
	// interrupted: the run's context ended before the phase's time was
	// up, so its figures cover only elapsed.
	interrupted bool
}

// merged returns, per class, what the clients recorded in all.
func (p *phase) merged() *recorder { return mergeRecorders(p.recs) }

// runPhase runs clients on db for d (or until ctx is done: the phase is
// then interrupted) and returns what they recorded and, under resource
// control, what each resource group consumed. An operation still running
// when the phase ends is cancelled and not counted.
func runPhase(ctx context.Context, db *kv.DB, clients []client, d time.Duration) *phase {
	ctx, cancel := context.WithTimeoutCause(ctx, d, errPhaseOver)
	defer cancel()
	p := &phase{recs: make([]*recorder, len(clients))}
	controlled := db.Options().ResourceControl
	var before map[string]float64
	if controlled {
		before = groupRU(db)
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
		after := groupRU(db)
		window := max(end.Sub(start), time.Nanosecond).Seconds()
		p.ruPerSec = make(map[string]float64, len(after))
		for g, ru := range after {
			p.ruPerSec[g] = (ru - before[g]) / window
		}
	}
	wg.Wait()
	p.elapsed = min(end.Sub(start), d)
	return p
}

// groupRU returns each resource group's RU consumed so far.
func groupRU(db *kv.DB) map[string]float64 {
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

// get reads key n.
func get(ctx context.Context, db *kv.DB, buf []byte, n int64) error {
	_, err := db.Get(ctx, appendKey(buf[:0], n))
	return err
}

// scan reads up to n keys from key number start and checks that it saw at
// least want of them (the keys known to exist there).
func scan(ctx context.Context, db *kv.DB, start int64, n int, want int64) error {
	// A fresh start key: the scan's task may hold it until it ends.
	it := db.Scan(ctx, appendKey(nil, start), nil, &kv.ScanOptions{Limit: n})
	rows := int64(0)
	for it.Next() {
		rows++
	}
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err == nil && rows < want {
		err = fmt.Errorf("scan from %s: %d rows, want %d", appendKey(nil, start), rows, want)
	}
	return err
}

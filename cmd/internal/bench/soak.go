package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/kv"
)

// The soak workload checks that the store stays right under a long mixed
// load (`kvbench soak --duration 10m`): --clients writers (Sets
// and Deletes, alone or in batches) over a subset of soakKeys keys under
// soakPrefix, beside --clients Get readers (pausing --think between Gets,
// see getter), a range scanner and a coprocessor client counting and
// summing ranges, all checked against an in-memory model of the subset;
// and every soakCheckEvery, and at the end of each phase, a full check of
// every key of the subset against the model. It runs on each scheduler,
// as the plain workloads do; writes are classUpdate, whichever kind.
//
// The model. Writer i owns the keys whose number is i modulo the writers,
// so writers never race on a key and the model needs no lock per key.
// Each key has a sequence number, odd while a write of it is in flight
// (or after a write that failed, until the next one succeeds: its value
// is then unknown) and even when the model's value is what the store
// holds — a seqlock: a reader notes the number, reads the store, loads
// the model's value and notes the number again, and checks the answer
// only if the two are equal and even. A read that overlapped a write is
// not checked; the full checks pause the writers (a RWMutex they hold
// shared per write) and check every key.
//
// The model starts each phase from the store: its values must be rows of
// the soak (a row names its own key), and from then on the store must
// follow the model. (Durability across a reopen is the crash tests'
// concern, in kv.)
//
// A mismatch is a failure, not an operation error: the phase keeps it —
// phase.failure returns the first, naming the key, and the run that
// measured the phase fails with it (exit status 1) — and the table counts
// it among the errors of the class of the read that saw it (scan for the
// full checks). Operation errors (kv: busy, a failed write) are counted
// as in any workload; a failed write makes its keys unknown until
// rewritten.

const (
	soakPrefix = "soak/"
	// soakEnd is just past every key under soakPrefix.
	soakEnd = "soak0"
	// soakKeys is the subset's size.
	soakKeys = 10_000
	// soakCheckEvery is the interval between full checks.
	soakCheckEvery = 10 * time.Second
	// soakMaxBatch is the most writes a batch holds.
	soakMaxBatch = 8
	// soakMaxScan and soakMaxCop are the most keys a scan's or an
	// aggregate's range covers.
	soakMaxScan = 300
	soakMaxCop  = 300
	// soakKeepFailures is how many failures a phase keeps in full; the
	// others are counted.
	soakKeepFailures = 100
	// soakFinalCheckTimeout bounds the full check at the end of a phase,
	// which runs after the phase's context has ended.
	soakFinalCheckTimeout = time.Minute
)

// soakOptions shape a soak workload; tests make small, tampered ones.
type soakOptions struct {
	keys  int           // the subset's size
	every time.Duration // between full checks
	// tamper, when set, is called before each full check, with the
	// writers paused: a test changes the store or the model behind the
	// soak's back, and the check must notice.
	tamper func(db kv.Store, m *soakModel)
}

// soakWorkload is the soak: --clients writers, --clients Get readers, one
// scanner, one coprocessor client, and the checker, on the default
// subset and interval.
func soakWorkload() Workload {
	return newSoakWorkload(soakOptions{keys: soakKeys, every: soakCheckEvery})
}

func newSoakWorkload(o soakOptions) *soakLoad {
	w := &soakLoad{}
	w.plain = plain{
		name:  "soak",
		short: "a long mixed load, every answer checked against a model",
		long: `soak checks that the store stays right under a long mixed load
(kvbench soak --duration 10m): --clients writers (Sets and Deletes, alone or
in batches)
over a subset of 10,000 keys of its own beside --clients Get readers
(pausing --think between Gets), a range scanner and a coprocessor client,
all checked against an in-memory model of the subset, and every 10 s, and
at the end of each phase, a full check of every key of the subset. A
mismatch fails the run (exit status 1), naming the key.`,
		classes: []class{classGet, classScan, classUpdate, classCop},
		clients: func(e *env) []client { return newSoakRun(e, w, o).clients() },
	}
	return w
}

type soakLoad struct {
	plain
	clients clientsFlag
	think   time.Duration // a Get reader's pause between Gets
}

func (w *soakLoad) Flags(fs *pflag.FlagSet) {
	w.clients.add(fs, "writer goroutines, and as many Get readers")
	fs.DurationVar(&w.think, "think", 200*time.Microsecond, "a Get reader's pause between two Gets")
}

func (w *soakLoad) Validate() error {
	errs := []error{w.clients.validate(1, "")}
	if w.think < 0 {
		errs = append(errs, fmt.Errorf("--think must not be negative, not %v", w.think))
	}
	return errors.Join(errs...)
}

// Check fails a phase in which the store and the model disagreed.
func (w *soakLoad) Check(m *Measured) error { return m.failure() }

// soakRun is one phase of the soak.
type soakRun struct {
	e *env
	w *soakLoad
	o soakOptions
	m *soakModel
	// gate: writers hold it shared for each write, a full check holds it
	// exclusively, so that it sees no write in flight.
	gate sync.RWMutex
	// others counts the clients but the checker that are still running:
	// the checker's final check waits for them.
	others sync.WaitGroup

	mu       sync.Mutex
	failures []*soakFailure // the first soakKeepFailures
	lost     map[class]int  // failures past those, by class
}

func newSoakRun(e *env, w *soakLoad, o soakOptions) *soakRun {
	s := &soakRun{e: e, w: w, o: o, lost: map[class]int{}}
	s.m = s.load()
	return s
}

// load reads the subset into a new model. What is not the soak's — a key
// under soakPrefix outside the subset, a value that is not a soak row of
// its key — is a failure; such a value is still taken into the model as it
// is, so that it is reported once, not by every read of it.
func (s *soakRun) load() *soakModel {
	m := &soakModel{keys: make([]soakKey, s.o.keys)}
	ctx, cancel := context.WithTimeout(context.Background(), soakFinalCheckTimeout)
	defer cancel()
	it := s.e.db.Scan(ctx, []byte(soakPrefix), []byte(soakEnd), nil)
	defer it.Close()
	for k, v := range it.All() {
		i, ok := soakKeyNumber(k, s.o.keys)
		if !ok {
			s.fail(classScan, "the store holds %q under %s, which is not a key of the subset", k, soakPrefix)
			continue
		}
		sv, err := decodeSoakValue(k, v)
		if err != nil {
			s.fail(classScan, "key %s holds %s: %v", k, describeSoakValue(v, true), err)
			sv = &soakValue{row: bytes.Clone(v)}
		}
		m.keys[i].val.Store(sv)
	}
	if err := it.Err(); err != nil {
		s.fail(classScan, "loading the model: %v", err)
	}
	return m
}

// fail keeps a failure for the checker to record.
func (s *soakRun) fail(c class, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failures) < soakKeepFailures {
		s.failures = append(s.failures, &soakFailure{class: c, seq: len(s.failures), what: fmt.Sprintf(format, args...)})
	} else {
		s.lost[c]++
	}
}

// clients returns the phase's clients: writers, Get readers, a scanner,
// a coprocessor client and the checker.
func (s *soakRun) clients() []client {
	n := s.w.clients.n
	var cs []client
	for i := range n {
		cs = append(cs, s.other(s.writer(i, n)))
	}
	for i := range n {
		cs = append(cs, s.other(s.getter(n+i)))
	}
	cs = append(cs, s.other(s.scanner(2*n)), s.other(s.aggregator(2*n+1)), s.checker)
	return cs
}

// other counts c among the clients the checker waits for.
func (s *soakRun) other(c client) client {
	s.others.Add(1)
	return func(ctx context.Context, rec *recorder) {
		defer s.others.Done()
		c(ctx, rec)
	}
}

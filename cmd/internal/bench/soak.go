package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/coproc"
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

func (w *soakLoad) Validate() []error {
	errs := w.clients.validate(1, "")
	if w.think < 0 {
		errs = append(errs, fmt.Errorf("--think must not be negative, not %v", w.think))
	}
	return errs
}

// Check fails a phase in which the store and the model disagreed.
func (w *soakLoad) Check(m *Measured) error { return m.failure() }

// soakKey is one key's entry in the model.
type soakKey struct {
	// seq is odd while a write is in flight, or its value is unknown
	// after a failed write; even when val is what the store holds. Only
	// the key's writer changes it.
	seq atomic.Uint64
	// val is the key's value when seq is even; nil for no value. Stored
	// before seq turns even, so a reader that sees the same even seq
	// before and after loading it has the value of that seq.
	val atomic.Pointer[soakValue]
}

// soakValue is a value of the soak: a coprocessor row naming its key,
// with an amount the aggregates sum.
type soakValue struct {
	row    []byte
	amount int64
}

// soakModel is what the soak believes the subset holds.
type soakModel struct {
	keys []soakKey
}

func soakKeyBytes(dst []byte, n int) []byte {
	dst = append(dst, soakPrefix...)
	return fmt.Appendf(dst, "%08d", n)
}

// soakKeyNumber returns the number of key, or false if key is not one of
// the n keys of the subset.
func soakKeyNumber(key []byte, n int) (int, bool) {
	rest, ok := bytes.CutPrefix(key, []byte(soakPrefix))
	if !ok || len(rest) != 8 {
		return 0, false
	}
	i, err := strconv.Atoi(string(rest))
	if err != nil || i < 0 || i >= n {
		return 0, false
	}
	return i, true
}

// soakRange returns the bounds of keys lo … hi-1 of the subset of n.
func soakRange(lo, hi, n int) (start, end []byte) {
	start = soakKeyBytes(nil, lo)
	if hi >= n {
		return start, []byte(soakEnd)
	}
	return start, soakKeyBytes(nil, hi)
}

// decodeSoakValue checks that row is a soak row of key and returns it.
func decodeSoakValue(key, row []byte) (*soakValue, error) {
	m, err := coproc.DecodeRow(row)
	if err != nil {
		return nil, err
	}
	k, _ := m["k"].(string)
	amount, ok := m["amount"].(int64)
	if k != string(key) || !ok {
		return nil, fmt.Errorf("not a soak row of %s: k=%v amount=%v", key, m["k"], m["amount"])
	}
	return &soakValue{row: bytes.Clone(row), amount: amount}, nil
}

// soakFailure is a mismatch between the store and the model: the store
// answered what the model says it cannot hold.
type soakFailure struct {
	class class  // the class of the read that saw it
	seq   int    // its place among the phase's failures
	what  string // the read and what it got, naming the key or range
}

func (f *soakFailure) Error() string { return "soak: " + f.what }

// describeSoakValue words a value for a failure.
func describeSoakValue(v []byte, present bool) string {
	if !present {
		return "no value"
	}
	if m, err := coproc.DecodeRow(v); err == nil {
		return fmt.Sprintf("a row of %d bytes (k=%v ver=%v amount=%v)", len(v), m["k"], m["ver"], m["amount"])
	}
	if len(v) > 32 {
		return fmt.Sprintf("%d bytes %x…", len(v), v[:32])
	}
	return fmt.Sprintf("%d bytes %x", len(v), v)
}

// failure returns the first failure of the soak that the phase recorded,
// or nil: a soak phase that returns one failed — the store gave a wrong
// answer. The soak's checker records its failures, and only they, in a
// recorder of its own, so the first error of each of its classes is one.
func (p *Measured) failure() error {
	var first *soakFailure
	n := int64(0)
	for _, r := range p.recs {
		for _, cs := range r.classes {
			var f *soakFailure
			if cs != nil && errors.As(cs.firstErr, &f) {
				n += cs.errors
				if first == nil || f.seq < first.seq {
					first = f
				}
			}
		}
	}
	switch {
	case first == nil:
		return nil
	case n > 1:
		return fmt.Errorf("%w (and %d more)", first, n-1)
	}
	return first
}

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

// writer returns writer i of n: Sets, Deletes and batches of the keys it
// owns, numbers i, i+n, i+2n ….
func (s *soakRun) writer(i, n int) client {
	r := s.e.rand(i)
	owned := (s.o.keys - i + n - 1) / n
	pad := make([]byte, s.e.cfg.ValueSize)
	ver := int64(0)
	pick := func() int { return i + n*r.IntN(owned) }
	value := func(k []byte) (*soakValue, error) {
		ver++
		fillValue(r, pad)
		amount := r.Int64N(rowMaxAmount)
		row, err := coproc.EncodeRow(map[string]any{"k": string(k), "ver": ver, "amount": amount, "pad": pad})
		return &soakValue{row: row, amount: amount}, err
	}
	return closedLoop(func(ctx context.Context) (class, error) {
		if owned <= 0 {
			<-ctx.Done()
			return classUpdate, nil
		}
		s.gate.RLock()
		defer s.gate.RUnlock()
		type write struct {
			n   int
			key []byte
			val *soakValue // nil: delete
		}
		var ws []write
		switch x := r.IntN(100); {
		case x < 60, x < 75:
			w := write{n: pick()}
			w.key = soakKeyBytes(nil, w.n)
			if x < 60 {
				v, err := value(w.key)
				if err != nil {
					return classUpdate, err
				}
				w.val = v
			}
			ws = append(ws, w)
		default:
			seen := map[int]bool{}
			for range 2 + r.IntN(soakMaxBatch-1) {
				w := write{n: pick()}
				if seen[w.n] {
					continue // one write per key: the model is per key
				}
				seen[w.n] = true
				w.key = soakKeyBytes(nil, w.n)
				if r.IntN(4) != 0 {
					v, err := value(w.key)
					if err != nil {
						return classUpdate, err
					}
					w.val = v
				}
				ws = append(ws, w)
			}
		}
		for _, w := range ws {
			k := &s.m.keys[w.n]
			if seq := k.seq.Load(); seq%2 == 0 {
				k.seq.Store(seq + 1)
			}
		}
		// One write or several, a batch: kv.Store writes only batches.
		b := s.e.db.NewBatch()
		for _, w := range ws {
			if w.val == nil {
				b.Delete(w.key)
			} else {
				b.Set(w.key, w.val.row)
			}
		}
		if err := s.e.db.Write(ctx, b); err != nil {
			return classUpdate, err // the keys stay odd: unknown until rewritten
		}
		for _, w := range ws {
			k := &s.m.keys[w.n]
			k.val.Store(w.val)
			k.seq.Add(1)
		}
		return classUpdate, nil
	})
}

// getter returns a Get reader, random stream stream. It pauses --think
// between Gets: back to back, Gets of fresh tasks would keep the scans
// and aggregates beside them waiting in the pool's level 0 (the MLFQ
// serves fresh tasks first), and the soak means to check them all.
func (s *soakRun) getter(stream int) client {
	r := s.e.rand(stream)
	return thinkLoop(s.w.think, func(ctx context.Context) (class, error) {
		n := r.IntN(s.o.keys)
		key := soakKeyBytes(nil, n)
		k := &s.m.keys[n]
		before := k.seq.Load()
		got, err := s.e.db.Get(ctx, key)
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return classGet, err
		}
		want := k.val.Load()
		if k.seq.Load() != before || before%2 != 0 {
			return classGet, nil // a write overlapped: nothing to check
		}
		present := err == nil
		if present != (want != nil) || present && !bytes.Equal(got, want.row) {
			s.fail(classGet, "get %s: the store has %s, the model %s", key, describeSoakValue(got, present), describeModel(want))
		}
		return classGet, nil
	})
}

func describeModel(v *soakValue) string {
	if v == nil {
		return describeSoakValue(nil, false)
	}
	return describeSoakValue(v.row, true)
}

// scanner returns the range-scan client: up to soakMaxScan keys from a
// random key, a random limit one time in two, in reverse one time in
// three.
func (s *soakRun) scanner(stream int) client {
	r := s.e.rand(stream)
	seqs := make([]uint64, soakMaxScan)
	return closedLoop(func(ctx context.Context) (class, error) {
		lo := r.IntN(s.o.keys)
		hi := min(lo+1+r.IntN(soakMaxScan), s.o.keys)
		o := &kv.ScanOptions{Reverse: r.IntN(3) == 0}
		if r.IntN(2) == 0 {
			o.Limit = 1 + r.IntN(hi-lo)
		}
		for i := lo; i < hi; i++ {
			seqs[i-lo] = s.m.keys[i].seq.Load()
		}
		start, end := soakRange(lo, hi, s.o.keys)
		type row struct {
			n   int
			val []byte
		}
		var rows []row
		it := s.e.db.Scan(ctx, start, end, o)
		for k, v := range it.All() {
			n, ok := soakKeyNumber(k, s.o.keys)
			if !ok || n < lo || n >= hi {
				s.fail(classScan, "scan [%s, %s): a row of key %q, outside the range", start, end, k)
				continue
			}
			rows = append(rows, row{n, bytes.Clone(v)})
		}
		err := it.Err()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return classScan, err
		}
		// covered is what the scan answered for: all of [lo, hi), or up to
		// its last row when it stopped at its limit.
		cLo, cHi := lo, hi
		if o.Limit > 0 && len(rows) == o.Limit {
			if last := rows[len(rows)-1].n; o.Reverse {
				cLo = last
			} else {
				cHi = last + 1
			}
		}
		got := make(map[int][]byte, len(rows))
		prev := -1
		for _, rw := range rows {
			if prev >= 0 && (!o.Reverse && rw.n <= prev || o.Reverse && rw.n >= prev) {
				s.fail(classScan, "scan [%s, %s) %+v: key %s after key %s, out of order", start, end, *o,
					soakKeyBytes(nil, rw.n), soakKeyBytes(nil, prev))
			}
			prev = rw.n
			got[rw.n] = rw.val
		}
		for i := cLo; i < cHi; i++ {
			k := &s.m.keys[i]
			want := k.val.Load()
			if k.seq.Load() != seqs[i-lo] || seqs[i-lo]%2 != 0 {
				continue
			}
			v, present := got[i]
			if present != (want != nil) || present && !bytes.Equal(v, want.row) {
				s.fail(classScan, "scan [%s, %s) %+v, key %s: the store has %s, the model %s", start, end, *o,
					soakKeyBytes(nil, i), describeSoakValue(v, present), describeModel(want))
			}
		}
		return classScan, nil
	})
}

// aggregator returns the coprocessor client: count(*) and sum(amount)
// over up to soakMaxCop keys from a random key, checked when no key of
// the range was written meanwhile.
func (s *soakRun) aggregator(stream int) client {
	r := s.e.rand(stream)
	seqs := make([]uint64, soakMaxCop)
	return closedLoop(func(ctx context.Context) (class, error) {
		lo := r.IntN(s.o.keys)
		hi := min(lo+1+r.IntN(soakMaxCop), s.o.keys)
		for i := lo; i < hi; i++ {
			seqs[i-lo] = s.m.keys[i].seq.Load()
		}
		start, end := soakRange(lo, hi, s.o.keys)
		resp, err := s.e.db.Coprocessor(ctx, &coproc.Request{
			Ranges: []coproc.KeyRange{{Start: start, End: end}},
			Desc:   r.IntN(2) == 0,
			Aggs:   []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "amount", As: "sum"}},
		})
		if err != nil {
			return classCop, err
		}
		var n, sum int64
		for i := lo; i < hi; i++ {
			k := &s.m.keys[i]
			v := k.val.Load()
			if k.seq.Load() != seqs[i-lo] || seqs[i-lo]%2 != 0 {
				return classCop, nil // a write overlapped: nothing to check
			}
			if v != nil {
				n++
				sum += v.amount
			}
		}
		var wantSum any // the sum of no rows is null
		if n > 0 {
			wantSum = sum
		}
		if len(resp.Rows) != 1 || resp.Rows[0]["n"] != n || resp.Rows[0]["sum"] != wantSum {
			s.fail(classCop, "count and sum of [%s, %s): the store has %v, the model n=%d sum=%v", start, end, resp.Rows, n, wantSum)
		}
		return classCop, nil
	})
}

// checker checks every key every o.every and once more at the end of the
// phase, after the other clients have stopped; it then records the
// phase's failures, each as an error of the class of the read that saw
// it. It times nothing.
func (s *soakRun) checker(ctx context.Context, rec *recorder) {
	t := time.NewTimer(s.o.every)
	defer t.Stop()
	for done := false; !done; {
		select {
		case <-t.C:
			t.Reset(s.o.every)
		case <-ctx.Done():
			done = true
			s.others.Wait() // the writers are still: the check is final
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), soakFinalCheckTimeout)
			defer cancel()
		}
		s.gate.Lock()
		if s.o.tamper != nil {
			s.o.tamper(s.e.db, s.m)
		}
		err := s.checkAll(ctx)
		s.gate.Unlock()
		if err != nil && !done && ctx.Err() != nil {
			err = nil // the phase ended during the check: the final one follows
		}
		if err != nil {
			s.fail(classScan, "full check: %v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.failures {
		rec.record(f.class, 0, f)
	}
	for c, n := range s.lost {
		for range n {
			rec.record(c, 0, &soakFailure{class: c, seq: soakKeepFailures, what: "(a failure past the first kept)"})
		}
	}
}

// checkAll scans the subset and compares every key with the model. The
// writers are paused; keys whose value is unknown (a failed write) are
// skipped.
func (s *soakRun) checkAll(ctx context.Context) error {
	it := s.e.db.Scan(ctx, []byte(soakPrefix), []byte(soakEnd), nil)
	defer it.Close()
	next := 0 // the first key not yet compared
	missing := func(upTo int) {
		for ; next < upTo; next++ {
			k := &s.m.keys[next]
			if want := k.val.Load(); want != nil && k.seq.Load()%2 == 0 {
				s.fail(classScan, "full check, key %s: the store has %s, the model %s",
					soakKeyBytes(nil, next), describeSoakValue(nil, false), describeModel(want))
			}
		}
	}
	for key, v := range it.All() {
		n, ok := soakKeyNumber(key, s.o.keys)
		if !ok {
			s.fail(classScan, "full check: the store holds %q under %s, which is not a key of the subset", key, soakPrefix)
			continue
		}
		missing(n)
		k := &s.m.keys[n]
		next = n + 1
		if k.seq.Load()%2 != 0 {
			continue // unknown after a failed write
		}
		if want := k.val.Load(); want == nil || !bytes.Equal(v, want.row) {
			s.fail(classScan, "full check, key %s: the store has %s, the model %s",
				key, describeSoakValue(v, true), describeModel(want))
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	missing(s.o.keys)
	return nil
}

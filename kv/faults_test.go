package kv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv/internal/diskfs"
)

// The fault tests run the store on Pebble's error-injecting filesystem
// (vfs/errorfs), as Pebble's own TestErrors and TestRequireReadError do:
// a store written beforehand through kv is reopened on an errorfs that
// fails read operations (opening, listing, stat-ing and reading files).
// Whatever fails, every call must give the right answer or an error —
// never a wrong value, a missing row, a panic or a hang — and the store
// must answer correctly again once the faults stop.
//
// Reads only (diskfaults_test.go fails the writes), and reads other than
// listing a directory: Pebble v2.1.7's Open, when it
// fails after registering the DB with its compaction scheduler
// (open.go:532) — as it does when the List of the directory at
// open.go:609 fails — never unregisters it, and the scheduler's
// periodicGranter goroutine leaks (goleak then fails the package). Every
// other failure of Open is covered.

var faultsSeed = flag.Int64("faults.seed", 0, "seed of TestFaults_RandomReads (0 = from the clock); a failing run logs its seed")

const (
	faultsKeys = 2_000
	// faultsCallTimeout bounds every call of the fault tests: a call that
	// is still running then has hung.
	faultsCallTimeout = 10 * time.Second
)

// faultsReads are the operations the fault tests fail: reads but List
// (see above).
var faultsReads errorfs.Predicate = faultsReadsPred{}

type faultsReadsPred struct{}

func (faultsReadsPred) String() string { return "(And Reads (Not List))" }
func (faultsReadsPred) Evaluate(op errorfs.Op) bool {
	return op.Kind.ReadOrWrite() == errorfs.OpIsRead && op.Kind != errorfs.OpList
}

func faultsKey(i int) []byte { return fmt.Appendf(nil, "f%05d", i) }

// faultsRow is key i's value: a coprocessor row whose amount is i.
func faultsRow(t testing.TB, i int) []byte {
	t.Helper()
	row, err := coproc.EncodeRow(map[string]any{"amount": int64(i), "pad": strings.Repeat("p", 40+i%50)})
	require.NoError(t, err)
	return row
}

// faultsStore writes faultsKeys rows through kv into a fresh MemFS,
// flushes them into sstables and closes the store. It returns the
// filesystem and the rows by key.
func faultsStore(t *testing.T) (*vfs.MemFS, map[string][]byte) {
	t.Helper()
	mem := vfs.NewMem()
	db, err := Open("", &Options{FS: mem, NoSync: true, Logger: faultsLogger()})
	require.NoError(t, err)
	want := make(map[string][]byte, faultsKeys)
	b := db.NewBatch()
	for i := range faultsKeys {
		k, v := faultsKey(i), faultsRow(t, i)
		b.Set(k, v)
		want[string(k)] = v
		if b.Len() == 500 {
			require.NoError(t, db.Apply(b))
			b.Reset()
		}
	}
	require.NoError(t, db.Apply(b))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())
	return mem, want
}

// faultsLogger drops the store's log: every injected error would be
// logged by Pebble.
func faultsLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// faultsChecker runs the fault tests' calls on one open store and checks
// each answer against want.
type faultsChecker struct {
	t    *testing.T
	db   *DB
	want map[string][]byte
	// what names the run in failures.
	what string
	// errs are the calls that failed, cleanly.
	errs []error
	// served holds keys that a Get has answered correctly: the pool must
	// keep serving them after a failed call.
	served [][]byte
	// oneFault: at most one operation fails in the run, so once a call
	// has failed every other call must succeed.
	oneFault bool
}

// call runs f with a fresh deadline; f reports its error, nil if it gave
// the right answer. A deadline reached is a hang.
func (c *faultsChecker) call(name string, f func(ctx context.Context) error) error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultsCallTimeout)
	defer cancel()
	err := f(ctx)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		c.t.Fatalf("%s: %s hung (%v): %v", c.what, name, faultsCallTimeout, err)
	}
	var pe *panicError
	if errors.As(err, &pe) {
		c.t.Fatalf("%s: %s panicked: %v", c.what, name, err)
	}
	c.errs = append(c.errs, err)
	c.afterError(name)
	return err
}

// afterError checks that the pool still serves: a Get of a key already
// served (from the row cache, or from Pebble's block cache) answers
// right, or, unless oneFault, fails cleanly. With oneFault the one
// operation that fails in the run has failed already, so the Get must
// succeed.
func (c *faultsChecker) afterError(name string) {
	c.t.Helper()
	if len(c.served) == 0 {
		return
	}
	k := c.served[len(c.served)/2]
	ctx, cancel := context.WithTimeout(context.Background(), faultsCallTimeout)
	defer cancel()
	got, err := c.db.Get(ctx, k)
	switch {
	case err == nil && !bytes.Equal(got, c.want[string(k)]):
		c.t.Fatalf("%s: after %s failed, a Get of %s (served before) gave %x, want %x", c.what, name, k, got, c.want[string(k)])
	case err != nil && (c.oneFault || ctx.Err() != nil || !strings.Contains(err.Error(), "injected error")):
		c.t.Fatalf("%s: after %s failed, a Get of %s (served before) failed: %v", c.what, name, k, err)
	}
}

// get checks a Get of key: the right value (ErrNotFound for a key not in
// want), or an error.
func (c *faultsChecker) get(ctx context.Context, key []byte) error {
	got, err := c.db.Get(ctx, key)
	want, ok := c.want[string(key)]
	switch {
	case err == ErrNotFound && ok:
		c.t.Fatalf("%s: get %s: ErrNotFound for a key in the store", c.what, key)
	case err == ErrNotFound:
		return nil
	case err != nil:
		return err
	case !ok:
		c.t.Fatalf("%s: get %s: a value (%x) for a key not in the store", c.what, key, got)
	case !bytes.Equal(got, want):
		c.t.Fatalf("%s: get %s: wrong value %x, want %x", c.what, key, got, want)
	}
	c.served = append(c.served, key)
	return nil
}

// scan checks a Scan of [start, end) with o: what it returns must be the
// store's rows in order, complete unless Err reports an error.
func (c *faultsChecker) scan(ctx context.Context, start, end []byte, o *ScanOptions) error {
	want := model(c.want).scan(start, end, *o)
	it := c.db.Scan(ctx, start, end, o)
	defer it.Close()
	n := 0
	for k, v := range it.All() {
		if n >= len(want) {
			c.t.Fatalf("%s: scan [%q, %q) %+v: row %d (%s) past the %d rows in the store", c.what, start, end, *o, n, k, len(want))
		}
		if !bytes.Equal(k, want[n][0]) || !bytes.Equal(v, want[n][1]) {
			c.t.Fatalf("%s: scan [%q, %q) %+v: row %d is %s=%x, want %s=%x", c.what, start, end, *o, n, k, v, want[n][0], want[n][1])
		}
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	if n != len(want) {
		c.t.Fatalf("%s: scan [%q, %q) %+v: %d rows and no error, want %d", c.what, start, end, *o, n, len(want))
	}
	return it.Close()
}

// aggregate checks count(*) and sum(amount) over [start, end).
func (c *faultsChecker) aggregate(ctx context.Context, start, end []byte) error {
	resp, err := c.db.Coprocessor(ctx, &coproc.Request{
		Ranges: []coproc.KeyRange{{Start: start, End: end}},
		Aggs:   []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "amount", As: "sum"}},
	})
	if err != nil {
		return err
	}
	var n, sum int64
	for _, pair := range model(c.want).scan(start, end, ScanOptions{}) {
		row, err := coproc.DecodeRow(pair[1])
		require.NoError(c.t, err)
		n++
		sum += row["amount"].(int64)
	}
	var wantSum any // sum of no rows is null
	if n > 0 {
		wantSum = sum
	}
	if len(resp.Rows) != 1 || resp.Rows[0]["n"] != n || resp.Rows[0]["sum"] != wantSum {
		c.t.Fatalf("%s: count and sum over [%q, %q): got %v, want n=%d sum=%v", c.what, start, end, resp.Rows, n, wantSum)
	}
	return nil
}

// verifyAll checks that db holds exactly want: a full scan, a Get of
// every key, an aggregate, all without error.
func (c *faultsChecker) verifyAll() {
	c.t.Helper()
	require.NoError(c.t, c.call("full scan", func(ctx context.Context) error { return c.scan(ctx, nil, nil, &ScanOptions{}) }), c.what)
	for i := range faultsKeys {
		require.NoError(c.t, c.call("get", func(ctx context.Context) error { return c.get(ctx, faultsKey(i)) }), c.what)
	}
	require.NoError(c.t, c.call("aggregate", func(ctx context.Context) error { return c.aggregate(ctx, nil, nil) }), c.what)
}

// TestFaults_EveryReadIndex fails read operation i of a run, for i = 0,
// 1, 2 … until a run meets no injected error, as Pebble's TestErrors does.
// Open may fail (it is then counted); every call that fails must fail
// cleanly, never with a wrong answer, and leave the pool serving: a Get
// of a key served before answers right. After the faults the store reads
// right.
//
// A run reads each block once — the block cache then holds the whole
// store — so each call meets faults only when it reads first. Three
// orders put each first:
//
//   - gets: the faults start with Open; 200 Gets and 10 of missing keys,
//     then a count and sum of every row with the coprocessor;
//   - scan: the faults start after Open; a full scan, then 10 Gets;
//   - coprocessor: the faults start after Open; the count and sum, then
//     10 Gets.
//
// The subtests run in parallel, each on a store of its own.
func TestFaults_EveryReadIndex(t *testing.T) {
	gets := func(n int) func(c *faultsChecker) {
		return func(c *faultsChecker) {
			for j := 0; j < faultsKeys; j += faultsKeys / n {
				_ = c.call("get", func(ctx context.Context) error { return c.get(ctx, faultsKey(j)) })
			}
		}
	}
	missing := func(c *faultsChecker) {
		for j := range 10 {
			_ = c.call("get missing", func(ctx context.Context) error { return c.get(ctx, fmt.Appendf(nil, "f%05d~", j*97)) })
		}
	}
	scan := func(c *faultsChecker) {
		_ = c.call("full scan", func(ctx context.Context) error { return c.scan(ctx, nil, nil, &ScanOptions{}) })
	}
	aggregate := func(c *faultsChecker) {
		_ = c.call("aggregate", func(ctx context.Context) error { return c.aggregate(ctx, nil, nil) })
	}
	for _, order := range []struct {
		name      string
		afterOpen bool
		calls     []func(c *faultsChecker)
	}{
		{"gets", false, []func(c *faultsChecker){gets(200), missing, aggregate}},
		{"scan", true, []func(c *faultsChecker){scan, gets(10)}},
		{"coprocessor", true, []func(c *faultsChecker){aggregate, gets(10)}},
	} {
		t.Run(order.name, func(t *testing.T) {
			t.Parallel()
			mem, want := faultsStore(t)
			faultsEveryIndex(t, mem, want, order.afterOpen, func(c *faultsChecker) {
				for _, call := range order.calls {
					call(c)
				}
			})
			// After the faults: the plain filesystem reads everything right.
			db, err := Open("", &Options{FS: mem, Logger: faultsLogger()})
			require.NoError(t, err)
			defer func() { require.NoError(t, db.Close()) }()
			(&faultsChecker{t: t, db: db, want: want, what: t.Name() + ": after the faults"}).verifyAll()
		})
	}
}

// faultsEveryIndex runs run on the store in mem, failing read i of the
// run for i = 0, 1, 2 … until a run meets no injected error. Reads are
// counted from the start of Open, or, with afterOpen, from its end.
func faultsEveryIndex(t *testing.T, mem vfs.FS, want map[string][]byte, afterOpen bool, run func(c *faultsChecker)) {
	var (
		openFailed, callsFailed, runsFailed int
		firstErrs                           = map[string]int{}
		i                                   int32
	)
	for ; ; i++ {
		require.Less(t, i, int32(10_000), "still injecting after 10,000 runs: the run never ends without a read")
		// OnIndex counts down from its value and fires at 0; -1 never
		// fires (Pebble's TestRequireReadError arms it so, after setup).
		index := errorfs.OnIndex(i)
		if afterOpen {
			index.Store(-1)
		}
		inj := &errorfs.Counter{Injector: errorfs.ErrInjected.If(errorfs.And(faultsReads, index))}
		what := fmt.Sprintf("%s: read %d failed", t.Name(), i)
		// A small row cache: a large one costs Close ~70 ms under -race.
		db, err := Open("", &Options{FS: errorfs.Wrap(mem, inj), Logger: faultsLogger(), RowCacheHitsInPool: true, RowCacheSize: 1 << 20})
		if err != nil {
			require.Positive(t, inj.Load(), "%s: Open failed with no error injected: %v", what, err)
			require.ErrorContains(t, err, "injected error", what)
			openFailed++
			continue
		}
		if afterOpen {
			index.Store(i)
		}
		c := &faultsChecker{t: t, db: db, want: want, what: what, oneFault: true}
		run(c)
		require.NoError(t, db.Close(), what)

		injected := inj.Load()
		require.LessOrEqual(t, injected, uint64(1), what)
		for _, err := range c.errs {
			require.ErrorContains(t, err, "injected error", "%s: a call failed with an error that is not the injected one", what)
		}
		if len(c.errs) > 0 {
			runsFailed++
			callsFailed += len(c.errs)
			firstErrs[faultsErrShape(c.errs[0])]++
		}
		if injected == 0 {
			require.Empty(t, c.errs, "%s: calls failed with no error injected", what)
			break
		}
	}
	t.Logf("injected at read indices 0 … %d: Open failed %d times; %d runs saw %d failed calls; in %d runs the fault reached no call (a background read, or Peek's, or one retried)",
		i-1, openFailed, runsFailed, callsFailed, int(i)-openFailed-runsFailed)
	for shape, n := range firstErrs {
		t.Logf("%4d× %s", n, shape)
	}
}

// faultsErrShape is err's message without the keys it names, to group
// errors by kind in the log.
func faultsErrShape(err error) string {
	msg := strings.SplitN(err.Error(), "\n", 2)[0]
	if i := strings.Index(msg, `"f`); i >= 0 {
		if j := strings.Index(msg[i+1:], `"`); j >= 0 {
			msg = msg[:i] + `"…"` + msg[i+1+j+1:]
		}
	}
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	return msg
}

// TestFaults_RandomReads fails 1% of read operations at random (seeded)
// while 2,000 Gets, Scans and coprocessor requests run on a store whose
// block cache is too small to hold it, so that reads reach the files:
// every answer is right or an error. The faults begin after Open and end
// before the check that the store then reads right.
func TestFaults_RandomReads(t *testing.T) {
	seed := *faultsSeed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with: go test ./kv -run '%s' -faults.seed=%d)", seed, t.Name(), seed)
	mem, want := faultsStore(t)
	inj := &errorfs.Toggle{Injector: errorfs.ErrInjected.If(errorfs.And(faultsReads, errorfs.Randomly(0.01, seed)))}
	counter := &errorfs.Counter{Injector: inj}
	db, err := Open("", &Options{FS: errorfs.Wrap(mem, counter), Logger: faultsLogger(),
		CacheSize: 32 << 10, RowCacheSize: -1, Workers: 2, TimeSlice: 100 * time.Microsecond})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()

	r := rand.New(rand.NewPCG(uint64(seed), 0xfa017))
	c := &faultsChecker{t: t, db: db, want: want, what: fmt.Sprintf("seed %d", seed)}
	bound := func() []byte {
		if r.IntN(6) == 0 {
			return nil
		}
		return faultsKey(r.IntN(faultsKeys + 10))
	}
	var gets, scans, aggs, getErrs, scanErrs, aggErrs int
	inj.On()
	const ops = 2_000
	for op := range ops {
		c.what = fmt.Sprintf("seed %d, op %d", seed, op)
		switch x := r.IntN(100); {
		case x < 70:
			k := faultsKey(r.IntN(faultsKeys))
			if r.IntN(10) == 0 {
				k = append(k, '~') // missing
			}
			gets++
			if c.call("get", func(ctx context.Context) error { return c.get(ctx, k) }) != nil {
				getErrs++
			}
		case x < 90:
			start, end := bound(), bound()
			if start != nil && end != nil && bytes.Compare(start, end) > 0 {
				start, end = end, start
			}
			o := &ScanOptions{Reverse: r.IntN(3) == 0, KeysOnly: r.IntN(5) == 0}
			if r.IntN(2) == 0 {
				o.Limit = 1 + r.IntN(300)
			}
			scans++
			if c.call("scan", func(ctx context.Context) error { return c.scan(ctx, start, end, o) }) != nil {
				scanErrs++
			}
		default:
			start, end := bound(), bound()
			if start != nil && end != nil && bytes.Compare(start, end) > 0 {
				start, end = end, start
			}
			aggs++
			if c.call("aggregate", func(ctx context.Context) error { return c.aggregate(ctx, start, end) }) != nil {
				aggErrs++
			}
		}
	}
	inj.Off()
	for _, err := range c.errs {
		require.ErrorContains(t, err, "injected error", "a call failed with an error that is not the injected one")
	}
	t.Logf("%d ops, %d read operations failed: gets %d (%d failed), scans %d (%d failed), aggregates %d (%d failed)",
		ops, counter.Load(), gets, getErrs, scans, scanErrs, aggs, aggErrs)
	c.what = fmt.Sprintf("seed %d, after the faults", seed)
	c.verifyAll()
}

// TestFaults_PeekErrorKeepsFormat: Open raises the format of a new store
// only. An existing store keeps its format (raising it is one-way: an
// older Pebble could no longer open it) — also when the read that tells
// Open the store exists (pebble.Peek) fails.
//
// Open used to set FormatNewest when Peek returned any error, not only
// when the store did not exist, and a store at FormatMinSupported (13) was
// raised to FormatNewest (24) by one failed List. Now a failed Peek fails
// Open, and the store is as it was.
func TestFaults_PeekErrorKeepsFormat(t *testing.T) {
	mem := vfs.NewMem()
	pdb, err := pebble.Open("coopkv", &pebble.Options{FS: mem, FormatMajorVersion: pebble.FormatMinSupported, Logger: pebbleLogger{faultsLogger(), diskfs.NewHealth(faultsLogger())}})
	require.NoError(t, err)
	require.NoError(t, pdb.Set([]byte("k"), []byte("v"), pebble.Sync))
	require.NoError(t, pdb.Close())

	// Read 0 is Peek's List of the directory.
	_, err = Open("", &Options{FS: errorfs.Wrap(mem, errorfs.ErrInjected.If(errorfs.OnIndex(0))), Logger: faultsLogger()})
	require.ErrorContains(t, err, "injected error", "Open fails when it cannot tell what is there")

	// Once the fault is gone, the store opens at its own format.
	db, err := Open("", &Options{FS: mem, Logger: faultsLogger()})
	require.NoError(t, err)
	got, err := db.Get(context.Background(), []byte("k"))
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	require.NoError(t, db.Close())

	desc, err := pebble.Peek("coopkv", mem)
	require.NoError(t, err)
	require.Equal(t, pebble.FormatMinSupported, desc.FormatMajorVersion, "a failed Peek made Open raise an existing store's format")
}

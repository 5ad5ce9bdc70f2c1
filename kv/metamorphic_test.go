package kv

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// The metamorphic test runs one random sequence of operations — writes,
// batches, range deletions, flushes, Gets, Scans with limits and in
// reverse, coprocessor counts and sums over ranges, and transactions (up
// to three open at once, among the other operations: begin, Get, MultiGet,
// Scan read to its end or closed early, Set, Delete, Commit, Rollback) —
// on stores opened with every combination of the options that change how
// reads run but must not change what they return: the scheduler (mlfq,
// fifo, direct, and priority under resource control), the row cache (on
// at its default size, off) and the time slice (1 ms, and 20 µs so that
// scans and aggregates yield often). The scan buffer is fixed (two
// batches) and has no option.
//
// Every answer but a coprocessor's is the model's (model_test.go): the
// store as a sorted map, and each open transaction as its snapshot, its
// own writes, what it read and what was written since it began — so that
// a Commit must return ErrConflict exactly when the model says a key it
// read, or a key inside a range it scanned (as far as the scan went), was
// written after it began. A coprocessor's answer must be the first
// configuration's. A mismatch names the seed, the operation and the
// configuration.
//
// The default run is 4,000 operations on each of the 16 configurations
// (about 10 s under -race on 2 CPUs); a long run:
//
//	go test ./kv -run TestMetamorphic -metamorphic.seed N -metamorphic.ops 100000

var (
	metaSeed = flag.Uint64("metamorphic.seed", 0, "seed of TestMetamorphic (0 = from the clock); a failing run logs its seed")
	metaOps  = flag.Int("metamorphic.ops", 4_000, "operations of TestMetamorphic, each run on every configuration")
)

// metaKeys is the size of the key space: small enough that writes
// overwrite and delete keys that exist, large enough that a scan of it
// takes many steps at 20 µs.
const metaKeys = 250

type metaConfig struct {
	name string
	opts Options
}

func metaConfigs() []metaConfig {
	var cs []metaConfig
	for _, s := range []struct {
		name string
		opts Options
	}{
		{"mlfq", Options{Scheduler: SchedulerMLFQ}},
		{"fifo", Options{Scheduler: SchedulerFIFO}},
		{"direct", Options{Scheduler: SchedulerDirect}},
		{"priority", Options{ResourceControl: true}},
	} {
		for _, rc := range []int64{0, -1} {
			for _, slice := range []time.Duration{time.Millisecond, 20 * time.Microsecond} {
				o := s.opts
				o.InMemory, o.NoSync, o.RowCacheSize, o.TimeSlice = true, true, rc, slice
				rcName := "rowcache"
				if rc < 0 {
					rcName = "norowcache"
				}
				cs = append(cs, metaConfig{name: fmt.Sprintf("%s/%s/slice=%v", s.name, rcName, slice), opts: o})
			}
		}
	}
	return cs
}

// metaOp is one operation: what it does to a store, its description, and
// the model's answer.
type metaOp struct {
	desc string
	// run applies the operation to s and returns its answer, in words
	// that are equal exactly when the answers are.
	run func(ctx context.Context, s *metaStore) string
	// want is the model's answer, when modeled; a coprocessor request's
	// is not: the first configuration's answer stands for it.
	want    string
	modeled bool
}

// metaTxns is how many transactions may be open at once, in slots.
const metaTxns = 3

// metaStore is one configuration's store and its open transactions.
type metaStore struct {
	db   *DB
	txns [metaTxns]*Txn
}

func metaKey(i int) []byte { return fmt.Appendf(nil, "m%04d", i) }

// metaGen draws the operations, and keeps the model of the store and of
// its open transactions up to date with them.
type metaGen struct {
	r    *rand.Rand
	t    *testing.T
	m    model
	txns [metaTxns]*modelTxn // nil: the slot is free
	// commits and conflicts count the transactions' outcomes.
	commits, conflicts int
}

// wrote records in every open transaction a commit of keys and ranges,
// applied to the model already.
func (g *metaGen) wrote(keys []string, ranges ...modelRange) {
	for _, tx := range g.txns {
		if tx != nil {
			tx.wrote(keys, ranges)
		}
	}
}

// modeled returns op with the model's answer.
func modeled(op metaOp, want string) metaOp {
	op.want, op.modeled = want, true
	return op
}

func (g *metaGen) key() []byte { return metaKey(g.r.IntN(metaKeys)) }

// bounds is a range: most often a short one (up to 40 keys from a key
// of the space), else one whose ends are each open (nil) one time in
// four or any key of the space or just past it.
func (g *metaGen) bounds() ([]byte, []byte) {
	if g.r.IntN(4) != 0 {
		i := g.r.IntN(metaKeys)
		return metaKey(i), metaKey(i + 1 + g.r.IntN(40))
	}
	bound := func() []byte {
		if g.r.IntN(4) == 0 {
			return nil
		}
		return metaKey(g.r.IntN(metaKeys + 5))
	}
	start, end := bound(), bound()
	if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		start, end = end, start
	}
	return start, end
}

// value is a coprocessor row: an amount the aggregates sum, a tag, and a
// pad that makes the rows of a long scan fill many batches.
func (g *metaGen) value() []byte {
	row := map[string]any{
		"amount": g.r.Int64N(2_001) - 1_000,
		"tag":    fmt.Sprintf("t%d", g.r.IntN(5)),
		"pad":    strings.Repeat("x", g.r.IntN(120)),
	}
	if g.r.IntN(10) == 0 {
		delete(row, "amount") // sum skips it, count(*) does not
	}
	b, err := coproc.EncodeRow(row)
	require.NoError(g.t, err)
	return b
}

// op draws the next operation: four in ten on a transaction.
func (g *metaGen) op() metaOp {
	if g.r.IntN(10) < 4 {
		return g.txnOp()
	}
	switch x := g.r.IntN(100); {
	case x < 20:
		k, v := g.key(), g.value()
		g.m[string(k)] = v
		g.wrote([]string{string(k)})
		return modeled(metaOp{desc: fmt.Sprintf("set %s (%d bytes)", k, len(v)), run: func(_ context.Context, s *metaStore) string {
			return metaErr(s.db.Set(k, v))
		}}, "ok")
	case x < 27:
		k := g.key()
		delete(g.m, string(k))
		g.wrote([]string{string(k)})
		return modeled(metaOp{desc: fmt.Sprintf("delete %s", k), run: func(_ context.Context, s *metaStore) string {
			return metaErr(s.db.Delete(k))
		}}, "ok")
	case x < 37:
		type write struct {
			key, value []byte
			del        bool
		}
		var ws []write
		var desc, keys []string
		for range 1 + g.r.IntN(8) {
			w := write{key: g.key()}
			if w.del = g.r.IntN(3) == 0; w.del {
				desc = append(desc, fmt.Sprintf("del %s", w.key))
				delete(g.m, string(w.key))
			} else {
				w.value = g.value()
				desc = append(desc, fmt.Sprintf("set %s", w.key))
				g.m[string(w.key)] = w.value
			}
			ws = append(ws, w)
			keys = append(keys, string(w.key))
		}
		g.wrote(keys)
		return modeled(metaOp{desc: "apply [" + strings.Join(desc, ", ") + "]", run: func(_ context.Context, s *metaStore) string {
			b := s.db.NewBatch()
			for _, w := range ws {
				if w.del {
					b.Delete(w.key)
				} else {
					b.Set(w.key, w.value)
				}
			}
			return metaErr(s.db.Apply(b))
		}}, "ok")
	case x < 38 && g.r.IntN(10) == 0:
		// About one op in 1,000: every flush adds sstables, and Pebble's
		// race build records a stack for every reference to one.
		return modeled(metaOp{desc: "flush", run: func(_ context.Context, s *metaStore) string { return metaErr(s.db.Flush()) }}, "ok")
	case x < 39:
		start, end := g.bounds()
		r := modelRange{start, end}
		for k := range g.m {
			if r.has(k) {
				delete(g.m, k)
			}
		}
		g.wrote(nil, r)
		return modeled(metaOp{desc: fmt.Sprintf("deleterange [%q, %q)", start, end), run: func(_ context.Context, s *metaStore) string {
			return metaErr(s.db.DeleteRange(start, end))
		}}, "ok")
	case x < 65:
		k := g.getKey()
		v, ok := g.m[string(k)]
		return modeled(metaOp{desc: fmt.Sprintf("get %s", k), run: func(ctx context.Context, s *metaStore) string {
			return metaValue(s.db.Get(ctx, k))
		}}, metaFound(v, ok))
	case x < 85:
		start, end, o := g.scanArgs()
		return modeled(metaOp{desc: fmt.Sprintf("scan [%q, %q) %+v", start, end, o), run: func(ctx context.Context, s *metaStore) string {
			return metaScan(s.db.Scan(ctx, start, end, &o), -1)
		}}, metaRows(g.m.scan(start, end, o)))
	default:
		start, end := g.bounds()
		req := &coproc.Request{
			Ranges: []coproc.KeyRange{{Start: start, End: end}},
			Aggs:   []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "amount", As: "sum"}},
			Desc:   g.r.IntN(3) == 0,
		}
		if g.r.IntN(3) == 0 {
			req.Filter = &coproc.Expr{Op: "ge", Args: []*coproc.Expr{{Op: "col", Col: "amount"}, {Op: "const", Value: g.r.Int64N(2_001) - 1_000}}}
		}
		if g.r.IntN(4) == 0 {
			req.GroupBy = []string{"tag"}
		}
		return metaOp{desc: fmt.Sprintf("coprocessor [%q, %q) desc=%v filter=%v group=%v", start, end, req.Desc, req.Filter != nil, req.GroupBy), run: func(ctx context.Context, s *metaStore) string {
			resp, err := s.db.Coprocessor(ctx, req)
			if err != nil {
				return metaErr(err)
			}
			rows := make([]string, len(resp.Rows))
			for i, row := range resp.Rows {
				rows[i] = fmt.Sprintf("%v/%v/%v", row["tag"], row["n"], row["sum"])
			}
			// Groups come in the order first seen, which a descending
			// scan changes; the configurations compare as sets.
			slices.Sort(rows)
			return strings.Join(rows, " ")
		}}
	}
}

// txnOp draws an operation on a transaction: one begins in a free slot,
// or one open reads, writes, commits or rolls back.
func (g *metaGen) txnOp() metaOp {
	var open, free []int
	for i, tx := range g.txns {
		if tx == nil {
			free = append(free, i)
		} else {
			open = append(open, i)
		}
	}
	if len(open) == 0 || len(free) > 0 && g.r.IntN(8) == 0 {
		i := free[g.r.IntN(len(free))]
		g.txns[i] = newModelTxn(g.m)
		return modeled(metaOp{desc: fmt.Sprintf("txn-begin #%d", i), run: func(ctx context.Context, s *metaStore) string {
			var err error
			s.txns[i], err = s.db.NewTxn(ctx)
			return metaErr(err)
		}}, "ok")
	}
	i := open[g.r.IntN(len(open))]
	tx := g.txns[i]
	switch x := g.r.IntN(100); {
	case x < 20:
		k := g.getKey()
		return modeled(metaOp{desc: fmt.Sprintf("txn-get #%d %s", i, k), run: func(ctx context.Context, s *metaStore) string {
			return metaValue(s.txns[i].Get(ctx, k))
		}}, metaFound(tx.get(string(k))))
	case x < 28:
		var keys [][]byte
		var want []string
		for range 1 + g.r.IntN(5) {
			k := g.getKey()
			keys = append(keys, k)
			want = append(want, metaFound(tx.get(string(k))))
		}
		return modeled(metaOp{desc: fmt.Sprintf("txn-multiget #%d %q", i, keys), run: func(ctx context.Context, s *metaStore) string {
			vals, err := s.txns[i].MultiGet(ctx, keys)
			if err != nil {
				return metaErr(err)
			}
			got := make([]string, len(vals))
			for j, v := range vals {
				got[j] = metaFound(v, v != nil)
			}
			return strings.Join(got, " ")
		}}, strings.Join(want, " "))
	case x < 52:
		start, end, o := g.scanArgs()
		stop := -1 // read to the end
		if g.r.IntN(3) == 0 {
			stop = g.r.IntN(8) // closed early
		}
		return modeled(metaOp{desc: fmt.Sprintf("txn-scan #%d [%q, %q) %+v stop=%d", i, start, end, o, stop), run: func(ctx context.Context, s *metaStore) string {
			return metaScan(s.txns[i].Scan(ctx, start, end, &o), stop)
		}}, metaRows(tx.scan(start, end, o, stop)))
	case x < 75:
		k, v := g.key(), g.value()
		tx.own[string(k)] = modelWrite{val: v}
		return modeled(metaOp{desc: fmt.Sprintf("txn-set #%d %s (%d bytes)", i, k, len(v)), run: func(_ context.Context, s *metaStore) string {
			return metaErr(s.txns[i].Set(k, v))
		}}, "ok")
	case x < 83:
		k := g.key()
		tx.own[string(k)] = modelWrite{del: true}
		return modeled(metaOp{desc: fmt.Sprintf("txn-delete #%d %s", i, k), run: func(_ context.Context, s *metaStore) string {
			return metaErr(s.txns[i].Delete(k))
		}}, "ok")
	case x < 95:
		g.txns[i] = nil
		want := "conflict"
		if keys, ok := tx.commit(g.m); ok {
			g.wrote(keys)
			g.commits++
			want = "ok"
		} else {
			g.conflicts++
		}
		return modeled(metaOp{desc: fmt.Sprintf("txn-commit #%d (%d writes)", i, len(tx.own)), run: func(ctx context.Context, s *metaStore) string {
			err := s.txns[i].Commit(ctx)
			s.txns[i] = nil
			return metaErr(err)
		}}, want)
	default:
		g.txns[i] = nil
		return modeled(metaOp{desc: fmt.Sprintf("txn-rollback #%d", i), run: func(_ context.Context, s *metaStore) string {
			s.txns[i].Rollback()
			s.txns[i] = nil
			return "ok"
		}}, "ok")
	}
}

// getKey is a key to read: one in eight never written.
func (g *metaGen) getKey() []byte {
	k := g.key()
	if g.r.IntN(8) == 0 {
		k = append(k, '~')
	}
	return k
}

// scanArgs are a scan's range and options: a Limit one time in three
// short, one in three up to twice the keys, else none.
func (g *metaGen) scanArgs() ([]byte, []byte, ScanOptions) {
	start, end := g.bounds()
	o := ScanOptions{Reverse: g.r.IntN(3) == 0, KeysOnly: g.r.IntN(5) == 0}
	switch g.r.IntN(3) {
	case 0:
		o.Limit = 1 + g.r.IntN(20)
	case 1:
		o.Limit = 1 + g.r.IntN(2*metaKeys)
	}
	return start, end, o
}

// TestMetamorphic runs one random sequence of operations on every
// configuration, in lockstep — each operation on every store, then the
// next — and compares every answer with the first configuration's.
// No operation may fail.
func TestMetamorphic(t *testing.T) {
	seed := *metaSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with: go test ./kv -run 'TestMetamorphic' -metamorphic.seed=%d)", seed, seed)
	configs := metaConfigs()
	dbs := make([]*metaStore, len(configs))
	for i, c := range configs {
		dbs[i] = &metaStore{db: openTest(t, "", &c.opts)}
	}
	g := &metaGen{r: rand.New(rand.NewPCG(seed, 0x3e7a)), t: t, m: model{}}
	ctx := context.Background()
	counts := map[string]int{}
	answers := make([]string, len(dbs))
	for i := range *metaOps {
		op := g.op()
		counts[strings.Fields(op.desc)[0]]++
		// Two goroutines, each with every other store: the stores are
		// apart, and the waits of one overlap the other's work.
		var wg sync.WaitGroup
		for half := range 2 {
			wg.Go(func() {
				for j := half; j < len(dbs); j += 2 {
					answers[j] = op.run(ctx, dbs[j])
				}
			})
		}
		wg.Wait()
		want, by := op.want, "the model"
		if !op.modeled {
			want, by = answers[0], configs[0].name
			if strings.Contains(want, "error: ") {
				t.Fatalf("seed %d, op %d (%s) on %s: %s", seed, i, op.desc, configs[0].name, want)
			}
		}
		for j, got := range answers {
			if got != want {
				t.Fatalf("seed %d, op %d (%s): %s answered\n\t%s\nbut %s answered\n\t%s",
					seed, i, op.desc, configs[j].name, metaShort(got), by, metaShort(want))
			}
		}
	}
	for _, s := range dbs {
		for _, tx := range s.txns {
			if tx != nil {
				tx.Rollback()
			}
		}
	}
	t.Logf("%d ops on %d configurations: %v; transactions: %d committed, %d conflicts",
		*metaOps, len(configs), counts, g.commits, g.conflicts)
	if *metaOps >= 1_000 {
		assert.Positive(t, g.commits, "transactions committed")
		assert.Positive(t, g.conflicts, "transactions conflicted")
	}
}

// metaShort cuts a long answer for a failure message.
func metaShort(s string) string {
	if len(s) > 2_000 {
		return s[:2_000] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

package kv

import (
	"bytes"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// The metamorphic test runs one random sequence of operations — writes,
// batches, flushes, Gets, Scans with limits and in reverse, coprocessor
// counts and sums over ranges — on stores opened with every combination
// of the options that change how reads run but must not change what they
// return: the scheduler (mlfq, fifo, direct, and priority under resource
// control), the row cache (on at its default size, off) and the time
// slice (1 ms, and 20 µs so that scans and aggregates yield often). The
// scan buffer is fixed (two batches) and has no option. Every
// configuration must give every operation the same answer as the first;
// a mismatch names the seed, the operation and the configuration.
//
// The default run is 3,000 operations on each of the 16 configurations
// (about 10 s under -race on 2 CPUs); a long run:
//
//	go test ./kv -run TestMetamorphic -metamorphic.seed N -metamorphic.ops 100000

var (
	metaSeed = flag.Uint64("metamorphic.seed", 0, "seed of TestMetamorphic (0 = from the clock); a failing run logs its seed")
	metaOps  = flag.Int("metamorphic.ops", 3_000, "operations of TestMetamorphic, each run on every configuration")
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

// metaOp is one operation: what it does to a store, and its description.
type metaOp struct {
	desc string
	// run applies the operation to db and returns its answer, in words
	// that are equal exactly when the answers are.
	run func(ctx context.Context, db *DB) string
}

func metaKey(i int) []byte { return fmt.Appendf(nil, "m%04d", i) }

// metaGen draws the operations.
type metaGen struct {
	r *rand.Rand
	t *testing.T
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

func (g *metaGen) op() metaOp {
	switch x := g.r.IntN(100); {
	case x < 20:
		k, v := g.key(), g.value()
		return metaOp{fmt.Sprintf("set %s (%d bytes)", k, len(v)), func(_ context.Context, db *DB) string {
			return metaErr(db.Set(k, v))
		}}
	case x < 27:
		k := g.key()
		return metaOp{fmt.Sprintf("delete %s", k), func(_ context.Context, db *DB) string {
			return metaErr(db.Delete(k))
		}}
	case x < 37:
		type write struct {
			key, value []byte
			del        bool
		}
		var ws []write
		var desc []string
		for range 1 + g.r.IntN(8) {
			w := write{key: g.key()}
			if w.del = g.r.IntN(3) == 0; w.del {
				desc = append(desc, fmt.Sprintf("del %s", w.key))
			} else {
				w.value = g.value()
				desc = append(desc, fmt.Sprintf("set %s", w.key))
			}
			ws = append(ws, w)
		}
		return metaOp{"apply [" + strings.Join(desc, ", ") + "]", func(_ context.Context, db *DB) string {
			b := db.NewBatch()
			for _, w := range ws {
				if w.del {
					b.Delete(w.key)
				} else {
					b.Set(w.key, w.value)
				}
			}
			return metaErr(db.Apply(b))
		}}
	case x < 38 && g.r.IntN(10) == 0:
		// About one op in 1,000: every flush adds sstables, and Pebble's
		// race build records a stack for every reference to one.
		return metaOp{"flush", func(_ context.Context, db *DB) string { return metaErr(db.Flush()) }}
	case x < 65:
		k := g.key()
		if g.r.IntN(8) == 0 {
			k = append(k, '~') // never written
		}
		return metaOp{fmt.Sprintf("get %s", k), func(ctx context.Context, db *DB) string {
			v, err := db.Get(ctx, k)
			if err != nil {
				return metaErr(err)
			}
			return hex.EncodeToString(v)
		}}
	case x < 85:
		start, end := g.bounds()
		o := ScanOptions{Reverse: g.r.IntN(3) == 0, KeysOnly: g.r.IntN(5) == 0}
		switch g.r.IntN(3) {
		case 0:
			o.Limit = 1 + g.r.IntN(20)
		case 1:
			o.Limit = 1 + g.r.IntN(2*metaKeys)
		}
		return metaOp{fmt.Sprintf("scan [%q, %q) %+v", start, end, o), func(ctx context.Context, db *DB) string {
			var b []byte
			it := db.Scan(ctx, start, end, &o)
			n := 0
			for k, v := range it.All() {
				// Printable keys, values in hex: readable in a failure.
				b = append(b, k...)
				b = append(b, '=')
				b = hex.AppendEncode(b, v)
				b = append(b, ' ')
				n++
			}
			err := it.Err()
			if cerr := it.Close(); err == nil {
				err = cerr
			}
			return fmt.Sprintf("%d rows: %s%s", n, b, metaErr(err))
		}}
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
		return metaOp{fmt.Sprintf("coprocessor [%q, %q) desc=%v filter=%v group=%v", start, end, req.Desc, req.Filter != nil, req.GroupBy), func(ctx context.Context, db *DB) string {
			resp, err := db.Coprocessor(ctx, req)
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

// metaErr words an error for comparison: "ok" for nil, "not found" for
// ErrNotFound, the message else.
func metaErr(err error) string {
	switch err {
	case nil:
		return "ok"
	case ErrNotFound:
		return "not found"
	}
	return "error: " + err.Error()
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
	dbs := make([]*DB, len(configs))
	for i, c := range configs {
		dbs[i] = openTest(t, "", &c.opts)
	}
	g := &metaGen{r: rand.New(rand.NewPCG(seed, 0x3e7a)), t: t}
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
		want := answers[0]
		if strings.Contains(want, "error: ") {
			t.Fatalf("seed %d, op %d (%s) on %s: %s", seed, i, op.desc, configs[0].name, want)
		}
		for j := 1; j < len(dbs); j++ {
			if got := answers[j]; got != want {
				t.Fatalf("seed %d, op %d (%s): %s answered\n\t%s\nbut %s answered\n\t%s",
					seed, i, op.desc, configs[j].name, metaShort(got), configs[0].name, metaShort(want))
			}
		}
	}
	t.Logf("%d ops on %d configurations: %v", *metaOps, len(configs), counts)
}

// metaShort cuts a long answer for a failure message.
func metaShort(s string) string {
	if len(s) > 2_000 {
		return s[:2_000] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

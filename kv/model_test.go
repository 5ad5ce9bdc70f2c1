package kv

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	modelSeed = flag.Uint64("seed", 0, "seed for TestModel (0 = from the clock); a failing run prints its seed")
	modelOps  = flag.Int("ops", 20000, "operations per TestModel case")
)

// model is the sorted in-memory map the store is checked against.
type model map[string][]byte

func (m model) scan(start, end []byte, o ScanOptions) [][2][]byte {
	var keys []string
	for k := range m {
		if (start == nil || k >= string(start)) && (end == nil || k < string(end)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if o.Reverse {
		slices.Reverse(keys)
	}
	if o.Limit > 0 && len(keys) > o.Limit {
		keys = keys[:o.Limit]
	}
	out := make([][2][]byte, len(keys))
	for i, k := range keys {
		v := m[k]
		if o.KeysOnly {
			v = nil
		}
		out[i] = [2][]byte{[]byte(k), v}
	}
	return out
}

func TestModel(t *testing.T) {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	ops := *modelOps
	for _, c := range []struct {
		name   string
		opts   Options
		ops    int
		reopen bool
	}{
		{"mlfq-memory", Options{InMemory: true}, ops, false},
		{"mlfq-disk-reopen", Options{NoSync: true}, ops, true},
		{"fifo-memory-tinycache", Options{InMemory: true, Scheduler: SchedulerFIFO, RowCacheSize: 4 << 10}, ops / 4, false},
		{"direct-memory-nocache", Options{InMemory: true, Scheduler: SchedulerDirect, RowCacheSize: -1}, ops / 4, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("replay with: go test ./kv -run 'TestModel/%s' -seed %d", c.name, seed)
			runModel(t, seed, c.ops, c.opts, c.reopen)
		})
	}
}

func runModel(t *testing.T, seed uint64, ops int, opts Options, reopen bool) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dir := t.TempDir()
	db, err := Open(dir, &opts)
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	ctx := context.Background()
	m := model{}
	key := func() []byte { return fmt.Appendf(nil, "k%04d", r.IntN(300)) }
	bound := func() []byte {
		if r.IntN(5) == 0 {
			return nil
		}
		return fmt.Appendf(nil, "k%04d", r.IntN(320))
	}
	value := func() []byte {
		v := make([]byte, r.IntN(64))
		for i := range v {
			v[i] = byte(r.Uint32())
		}
		return v
	}
	fail := func(i int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, op %d: %s", seed, i, fmt.Sprintf(format, args...))
	}
	for i := range ops {
		if reopen && i == ops/2 {
			require.NoError(t, db.Close())
			db, err = Open(dir, &opts)
			require.NoError(t, err)
		}
		switch op := r.IntN(100); {
		case op < 30:
			k, v := key(), value()
			if err := db.Set(k, v); err != nil {
				fail(i, "set: %v", err)
			}
			m[string(k)] = v
		case op < 40:
			k := key()
			if err := db.Delete(k); err != nil {
				fail(i, "delete: %v", err)
			}
			delete(m, string(k))
		case op < 50:
			b := db.NewBatch()
			staged := model{}
			var dels []string
			for range 1 + r.IntN(6) {
				k := key()
				if r.IntN(3) == 0 {
					b.Delete(k)
					dels = append(dels, string(k))
					delete(staged, string(k))
				} else {
					v := value()
					b.Set(k, v)
					staged[string(k)] = v
					dels = slices.DeleteFunc(dels, func(d string) bool { return d == string(k) })
				}
			}
			if err := db.Apply(b); err != nil {
				fail(i, "apply: %v", err)
			}
			for _, d := range dels {
				delete(m, d)
			}
			for k, v := range staged {
				m[k] = v
			}
		case op < 85:
			k := key()
			got, err := db.Get(ctx, k)
			want, ok := m[string(k)]
			switch {
			case !ok && err != ErrNotFound:
				fail(i, "get %s: want ErrNotFound, got %q, %v", k, got, err)
			case ok && (err != nil || !bytes.Equal(got, want)):
				fail(i, "get %s: want %x, got %x, %v", k, want, got, err)
			}
		default:
			start, end := bound(), bound()
			if start != nil && end != nil && bytes.Compare(start, end) > 0 {
				start, end = end, start
			}
			o := ScanOptions{Reverse: r.IntN(3) == 0, KeysOnly: r.IntN(4) == 0}
			if r.IntN(2) == 0 {
				o.Limit = 1 + r.IntN(50)
			}
			want := m.scan(start, end, o)
			it := db.Scan(ctx, start, end, &o)
			var got [][2][]byte
			for k, v := range it.All() {
				got = append(got, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			}
			if err := it.Err(); err != nil {
				fail(i, "scan [%s, %s) %+v: %v", start, end, o, err)
			}
			require.NoError(t, it.Close())
			if len(got) != len(want) {
				fail(i, "scan [%s, %s) %+v: got %d rows, want %d", start, end, o, len(got), len(want))
			}
			for j := range want {
				if !bytes.Equal(got[j][0], want[j][0]) || !bytes.Equal(got[j][1], want[j][1]) {
					fail(i, "scan [%s, %s) %+v row %d: got %q=%x, want %q=%x", start, end, o, j, got[j][0], got[j][1], want[j][0], want[j][1])
				}
			}
		}
	}
}

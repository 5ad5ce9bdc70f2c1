package kv

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
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

// clone returns a copy of m; the values are shared, as nothing changes
// them in place.
func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// modelRange is a range of keys [start, end): a nil start is the first
// key, a nil end is past the last.
type modelRange struct{ start, end []byte }

// has reports whether k is inside r.
func (r modelRange) has(k string) bool {
	return string(r.start) <= k && (r.end == nil || k < string(r.end))
}

// meets reports whether r and o share a key: the later of their starts
// comes before both their ends.
func (r modelRange) meets(o modelRange) bool {
	later := max(string(r.start), string(o.start))
	return (r.end == nil || later < string(r.end)) && (o.end == nil || later < string(o.end))
}

// modelWrite is a transaction's buffered write of one key.
type modelWrite struct {
	val []byte
	del bool
}

// modelTxn is a transaction on the embedded store as the model sees it:
// the store as of its start, its own writes, what it read, and what others
// committed since it began. Its Commit conflicts exactly when one of those
// writes touched a key it read (Get and MultiGet of keys it had not
// written itself, found or not) or a key inside a range it scanned: the
// whole range when the scan ran to its end, up to the last row it returned
// when it stopped at its Limit or was closed early (nothing, closed before
// its first row).
type modelTxn struct {
	snap                    model
	own                     map[string]modelWrite
	readKeys, wroteKeys     map[string]bool
	readRanges, wroteRanges []modelRange
}

func newModelTxn(m model) *modelTxn {
	return &modelTxn{snap: m.clone(), own: map[string]modelWrite{}, readKeys: map[string]bool{}, wroteKeys: map[string]bool{}}
}

// get returns what the Txn reads at k.
func (tx *modelTxn) get(k string) ([]byte, bool) {
	if w, ok := tx.own[k]; ok {
		return w.val, !w.del
	}
	tx.readKeys[k] = true
	v, ok := tx.snap[k]
	return v, ok
}

// scan returns the rows a Scan of [start, end) with o shows the Txn, read
// until the scan ends or, stop >= 0, until stop rows have been read and
// the scan is closed; it records the range read.
func (tx *modelTxn) scan(start, end []byte, o ScanOptions, stop int) [][2][]byte {
	view := tx.snap.clone()
	for k, w := range tx.own {
		if w.del {
			delete(view, k)
		} else {
			view[k] = w.val
		}
	}
	rows := view.scan(start, end, o)
	closed := stop >= 0 && len(rows) >= stop // before Next said the end
	if closed {
		rows = rows[:stop]
	}
	r := modelRange{start, end}
	if closed || (o.Limit > 0 && len(rows) == o.Limit) {
		if len(rows) == 0 {
			return rows
		}
		last := rows[len(rows)-1][0]
		if o.Reverse {
			r.start = last
		} else {
			r.end = append(bytes.Clone(last), 0) // last, inclusive
		}
	}
	tx.readRanges = append(tx.readRanges, r)
	return rows
}

// wrote records a commit of keys and ranges by someone else.
func (tx *modelTxn) wrote(keys []string, ranges []modelRange) {
	for _, k := range keys {
		tx.wroteKeys[k] = true
	}
	tx.wroteRanges = append(tx.wroteRanges, ranges...)
}

// conflicts reports whether the Txn's Commit fails.
func (tx *modelTxn) conflicts() bool {
	if len(tx.own) == 0 {
		return false // read-only: it commits at once
	}
	for k := range tx.readKeys {
		if tx.wroteKeys[k] || slices.ContainsFunc(tx.wroteRanges, func(w modelRange) bool { return w.has(k) }) {
			return true
		}
	}
	for _, r := range tx.readRanges {
		for k := range tx.wroteKeys {
			if r.has(k) {
				return true
			}
		}
		if slices.ContainsFunc(tx.wroteRanges, r.meets) {
			return true
		}
	}
	return false
}

// commit applies the Txn's writes to m and returns the keys written, or
// reports false (and writes nothing) when it conflicts.
func (tx *modelTxn) commit(m model) ([]string, bool) {
	if tx.conflicts() {
		return nil, false
	}
	keys := make([]string, 0, len(tx.own))
	for k, w := range tx.own {
		if w.del {
			delete(m, k)
		} else {
			m[k] = w.val
		}
		keys = append(keys, k)
	}
	return keys, true
}

// The answers of the metamorphic test in words, the store's and the
// model's alike, equal exactly when the answers are.

// metaErr words an error for comparison: "ok" for nil, "not found" for
// ErrNotFound, "conflict" for ErrConflict, the message else.
func metaErr(err error) string {
	switch {
	case err == nil:
		return "ok"
	case err == ErrNotFound:
		return "not found"
	case errors.Is(err, ErrConflict):
		return "conflict"
	}
	return "error: " + err.Error()
}

// metaValue words a Get's answer: the value in hex, or the error.
func metaValue(v []byte, err error) string {
	if err != nil {
		return metaErr(err)
	}
	return hex.EncodeToString(v)
}

// metaFound words the model's value as metaValue words a Get's.
func metaFound(v []byte, ok bool) string {
	if !ok {
		return metaValue(nil, ErrNotFound)
	}
	return metaValue(v, nil)
}

// metaScan words a scan's answer: its rows, then how it ended. With stop
// >= 0 it reads at most stop rows and closes the scan.
func metaScan(it *Iterator, stop int) string {
	var b []byte
	n := 0
	for (stop < 0 || n < stop) && it.Next() {
		// Printable keys, values in hex: readable in a failure.
		b = metaRow(b, it.Key(), it.Value())
		n++
	}
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return fmt.Sprintf("%d rows: %s%s", n, b, metaErr(err))
}

func metaRow(b, k, v []byte) []byte {
	b = append(b, k...)
	b = append(b, '=')
	b = hex.AppendEncode(b, v)
	return append(b, ' ')
}

// metaRows words the model's rows as metaScan words a scan's.
func metaRows(rows [][2][]byte) string {
	var b []byte
	for _, r := range rows {
		b = metaRow(b, r[0], r[1])
	}
	return fmt.Sprintf("%d rows: %s%s", len(rows), b, metaErr(nil))
}

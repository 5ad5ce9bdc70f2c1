package bench

import (
	"bytes"
	"context"
	"errors"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// The soak's clients: writers, Get readers, the scanner and the
// aggregator, each checking what it reads against the model.

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
			s.m.keys[w.n].writing()
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
			s.m.keys[w.n].written(w.val)
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
		before := k.stamp()
		got, err := s.e.db.Get(ctx, key)
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return classGet, err
		}
		want, ok := k.since(before)
		if !ok {
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
			seqs[i-lo] = s.m.keys[i].stamp()
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
			want, ok := s.m.keys[i].since(seqs[i-lo])
			if !ok {
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
			seqs[i-lo] = s.m.keys[i].stamp()
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
			v, ok := s.m.keys[i].since(seqs[i-lo])
			if !ok {
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

package kv

import (
	"context"
	"fmt"
	"testing"

	"github.com/coopkv/coopkv/coproc"
)

// BenchmarkCoprocessor answers "count and sum of amount where amount >= X"
// over 1,000,000 msgpack rows two ways, side by side on one store: pushed
// down (DB.Coprocessor: only the amount column decoded, on the worker, one
// row shipped) and computed by the caller from DB.Scan and
// coproc.DecodeRow. Compare rows/s:
//
//	go test -run ^$ -bench Coprocessor -benchtime 5x ./kv/
func BenchmarkCoprocessor(b *testing.B) {
	const n = 1_000_000
	// A block cache that holds the data (as the baseline program's 256
	// MiB): the comparison is of decoding and shipping, not of reading
	// and decompressing blocks, which both ways pay alike.
	db := openTest(b, b.TempDir(), &Options{NoSync: true, CacheSize: 256 << 20})
	batch := db.NewBatch()
	for i := range n {
		row, err := coproc.EncodeRow(map[string]any{
			"region": fmt.Sprintf("r%02d", i%50),
			"amount": int64(i % 1000),
			"ts":     int64(1_700_000_000 + i),
			"note":   "a short note that every row carries",
		})
		if err != nil {
			b.Fatal(err)
		}
		batch.Set(keyN(i), row)
		if batch.Len() == 1000 {
			if err := db.Apply(batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	// Compact into one level, as a store that has been running would be:
	// the comparison is of decoding and shipping, not of L0's merge.
	if err := db.pdb.Compact(context.Background(), keyN(0), keyN(n), true); err != nil {
		b.Fatal(err)
	}
	const threshold = 500
	want := int64(n / 2)
	ctx := context.Background()
	req := &coproc.Request{
		Ranges: []coproc.KeyRange{{}},
		Filter: &coproc.Expr{Op: "ge", Args: []*coproc.Expr{{Op: "col", Col: "amount"}, {Op: "const", Value: threshold}}},
		Aggs:   []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "amount", As: "total"}},
	}
	b.Run("coprocessor", func(b *testing.B) {
		for range b.N {
			resp, err := db.Coprocessor(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if got := resp.Rows[0]["n"]; got != want {
				b.Fatalf("count %v, want %d", got, want)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("caller-scan-decode", func(b *testing.B) {
		for range b.N {
			it := db.Scan(ctx, nil, nil, nil)
			var count, sum int64
			for it.Next() {
				row, err := coproc.DecodeRow(it.Value())
				if err != nil {
					b.Fatal(err)
				}
				if a, ok := row["amount"].(int64); ok && a >= threshold {
					count++
					sum += a
				}
			}
			if err := it.Err(); err != nil {
				b.Fatal(err)
			}
			_ = it.Close()
			if count != want {
				b.Fatalf("count %d, want %d", count, want)
			}
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
}

// BenchmarkCoprocessorSmall sends small requests — count and sum over 100
// consecutive rows — from 8 client goroutines (4 per P on 2 Ps), pooled and
// direct side by side: what a request costs beyond its rows.
//
//	go test -run ^$ -bench CoprocessorSmall -benchtime 2s ./kv/
func BenchmarkCoprocessorSmall(b *testing.B) {
	const n, span = 100_000, 100
	dir := b.TempDir()
	db := openTest(b, dir, &Options{NoSync: true})
	load(b, db, n, func(i int) []byte {
		row, err := coproc.EncodeRow(map[string]any{"amount": int64(i % 1000)})
		if err != nil {
			b.Fatal(err)
		}
		return row
	})
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil { // the runs below reopen it
		b.Fatal(err)
	}
	for _, sched := range []Scheduler{SchedulerMLFQ, SchedulerDirect} {
		b.Run(string(sched), func(b *testing.B) {
			db := openTest(b, dir, &Options{Scheduler: sched})
			warm(b, db, n)
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for i := 0; pb.Next(); i++ {
					start := (i * 7919) % (n - span)
					req := &coproc.Request{
						Ranges: []coproc.KeyRange{{Start: keyN(start), End: keyN(start + span)}},
						Aggs:   []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "amount", As: "total"}},
					}
					resp, err := db.Coprocessor(ctx, req)
					if err != nil {
						b.Error(err)
						return
					}
					if got := resp.Rows[0]["n"]; got != int64(span) {
						b.Errorf("count %v, want %d", got, span)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
		})
	}
}

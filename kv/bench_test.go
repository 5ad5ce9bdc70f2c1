package kv

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// BenchmarkStore runs the store benchmarks side by side on one store of
// 200,000 keys (16-byte keys, 100-byte values) flushed to sstables:
//
//	go test -run ^$ -bench Store -benchtime 3s ./kv/
//
// Get/* run 8 client goroutines (RunParallel with 4 per P on 2 Ps); compare
// pooled against direct in one run. ShortScan/* run YCSB E's scans (1–100
// rows from a random key) from 4 goroutines; Scan/* read the whole store.
// Set/* write from 8 goroutines, with and without a transaction open.
func BenchmarkStore(b *testing.B) {
	const n = 200000
	dir := b.TempDir()
	db, err := Open(dir, &Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	load(b, db, n, func(i int) []byte {
		v := make([]byte, 100)
		for j := range v {
			v[j] = byte(i*31 + j)
		}
		return v
	})
	if err := db.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}

	for _, c := range []struct {
		name string
		opts Options
	}{
		{"mlfq-nocache", Options{RowCacheSize: -1}},
		{"direct-nocache", Options{Scheduler: SchedulerDirect, RowCacheSize: -1}},
		{"mlfq-cache", Options{}},
		{"direct-cache", Options{Scheduler: SchedulerDirect}},
	} {
		b.Run("Get/"+c.name, func(b *testing.B) {
			db := openTest(b, dir, &c.opts)
			warm(b, db, n)
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				r := rand.New(rand.NewPCG(rand.Uint64(), 1))
				ctx := context.Background()
				for pb.Next() {
					if _, err := db.Get(ctx, keyN(r.IntN(n))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "gets/s")
		})
	}

	// Writes outside transactions, and the same beside an open Txn (every
	// write then goes through the oracle's lock and is recorded).
	for _, c := range []struct {
		name    string
		opts    Options
		txnOpen bool
	}{
		{"nosync", Options{NoSync: true}, false},
		{"nosync-txn-open", Options{NoSync: true}, true},
		{"sync", Options{}, false},
		{"sync-txn-open", Options{}, true},
	} {
		b.Run("Set/"+c.name, func(b *testing.B) {
			db := openTest(b, dir, &c.opts)
			if c.txnOpen {
				tx, err := db.NewTxn(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				defer tx.Rollback()
			}
			benchSets(b, db, n)
		})
	}

	scans := []struct {
		name string
		opts Options
		raw  bool
	}{
		{"pooled-mlfq", Options{}, false},
		{"raw-pebble-iterator", Options{Scheduler: SchedulerDirect}, true},
		{"direct", Options{Scheduler: SchedulerDirect}, false},
	}
	for _, c := range scans {
		b.Run("ShortScan/"+c.name, func(b *testing.B) {
			db := openTest(b, dir, &c.opts)
			warm(b, db, n)
			benchShortScans(b, db, n, c.raw)
		})
	}
	for _, c := range scans {
		b.Run("Scan/"+c.name, func(b *testing.B) {
			db := openTest(b, dir, &c.opts)
			warm(b, db, n)
			var rows int
			b.ResetTimer()
			for range b.N {
				if c.raw {
					rows += rawScan(b, db.pdb)
					continue
				}
				it := db.Scan(context.Background(), nil, nil, nil)
				for it.Next() {
					_ = it.Key()
					_ = it.Value()
					rows++
				}
				if err := it.Err(); err != nil {
					b.Fatal(err)
				}
				_ = it.Close()
			}
			b.StopTimer()
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// benchShortScans runs YCSB E's scans from 4 goroutines: 1 to 100 rows
// (uniform) from a random start key, each value read, through db (pooled
// or direct) or, with raw, through a Pebble iterator per scan.
func benchShortScans(b *testing.B, db *DB, n int, raw bool) {
	var rows atomic.Int64
	b.SetParallelism(2) // × GOMAXPROCS
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 2))
		ctx := context.Background()
		var got int64
		for pb.Next() {
			start, limit := keyN(r.IntN(n)), 1+r.IntN(100)
			if raw {
				got += int64(rawShortScan(b, db.pdb, start, limit))
				continue
			}
			it := db.Scan(ctx, start, nil, &ScanOptions{Limit: limit})
			for it.Next() {
				_ = it.Value()
				got++
			}
			if err := it.Close(); err != nil {
				b.Error(err)
				return
			}
		}
		rows.Add(got)
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "scans/s")
	b.ReportMetric(float64(rows.Load())/float64(b.N), "rows/scan")
}

func rawShortScan(b *testing.B, pdb *pebble.DB, start []byte, limit int) int {
	it, err := pdb.NewIter(&pebble.IterOptions{LowerBound: start})
	if err != nil {
		b.Fatal(err)
	}
	rows := 0
	for valid := it.First(); valid && rows < limit; valid = it.Next() {
		// What a caller owning the rows needs: a copy of each.
		_ = bytes.Clone(it.Key())
		v, err := it.ValueAndErr()
		if err != nil {
			b.Fatal(err)
		}
		_ = bytes.Clone(v)
		rows++
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	return rows
}

func rawScan(b *testing.B, pdb *pebble.DB) int {
	it, err := pdb.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	rows := 0
	for valid := it.First(); valid; valid = it.Next() {
		_ = it.Key()
		if _, err := it.ValueAndErr(); err != nil {
			b.Fatal(err)
		}
		rows++
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	return rows
}

// warm reads every key once, so the block cache holds the tables for every
// variant alike.
func warm(b *testing.B, db *DB, n int) {
	b.Helper()
	it := db.Scan(context.Background(), nil, nil, &ScanOptions{KeysOnly: false})
	for it.Next() {
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	_ = n
}

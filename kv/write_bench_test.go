package kv

import (
	"math/rand/v2"
	"testing"
)

// benchSets runs Sets of random keys among n (16-byte keys, 100-byte
// values) from 8 goroutines on db, reporting sets/s.
func benchSets(b *testing.B, db *DB, n int) {
	val := make([]byte, 100)
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := rand.New(rand.NewPCG(rand.Uint64(), 2))
		for pb.Next() {
			if err := db.Set(keyN(r.IntN(n)), val); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sets/s")
}

// BenchmarkSet is BenchmarkStore's Set/nosync and Set/sync without the
// 200,000-key load, for A/B runs of the write path alone:
//
//	go test -run ^$ -bench '^BenchmarkSet$' -benchtime 2s ./kv/
func BenchmarkSet(b *testing.B) {
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"nosync", Options{NoSync: true}},
		{"sync", Options{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			benchSets(b, openTest(b, b.TempDir(), &c.opts), 200000)
		})
	}
}

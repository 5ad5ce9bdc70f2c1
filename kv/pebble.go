package kv

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// tunePebble sets what Pebble's defaults leave out. Pebble has no bloom
// filter unless asked: with one, a Get of a missing key skips the tables
// that cannot hold it.
//
// CockroachDB's production settings (pkg/storage's DefaultPebbleOptions) —
// larger memtables, L0 compaction at 2 sublevels, more concurrent
// compactions, 256 KiB index blocks — were tried here and measured with
// cmd/kvbench/ycsb (workloads a, b, c in a row, 2 CPUs, 2026-12-02): a
// 32 MiB memtable raised update-heavy A from ~26 k to ~40 k ops/s but cut
// read-only C from ~75 k to ~55 k, and the compaction and index settings
// cut B and C by a further 10–30% (runs vary by ±15%; the causes are not
// yet profiled). Until a setting wins on the mixes an embedded store
// serves, Pebble keeps its defaults.
func tunePebble(po *pebble.Options) {
	for i := range po.Levels {
		l := &po.Levels[i]
		l.FilterPolicy = bloom.FilterPolicy(10)
		l.FilterType = pebble.TableFilter
	}
}

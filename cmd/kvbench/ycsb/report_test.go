package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteMarkdown_Ratios(t *testing.T) {
	res := &results{
		Tool: "go-ycsb v1.0.3", Records: 10, Operations: 20, Threads: 2, FieldCount: 10, FieldLen: 100,
		Workloads: []string{"a"},
		Stores:    []storeInfo{{Name: "coopkv-mlfq"}, {Name: "badger"}, {Name: "bbolt"}},
	}
	for _, s := range []struct {
		name     string
		load, a  float64
		p99R     int64
		p99U     int64
		hasWrite bool
	}{{"coopkv-mlfq", 100, 300, 50, 70, true}, {"badger", 50, 100, 40, 60, true}, {"bbolt", 200, 150, 30, 0, false}} {
		res.Phases = append(res.Phases,
			phaseStats{Store: s.name, Workload: loadPhase, OpsPerSec: s.load, Ops: []opStats{{Op: "INSERT", Count: 10, P99Us: 9}}})
		ops := []opStats{{Op: "READ", Count: 10, P99Us: s.p99R}}
		if s.hasWrite {
			ops = append(ops, opStats{Op: "UPDATE", Count: 10, P99Us: s.p99U})
		}
		res.Phases = append(res.Phases, phaseStats{Store: s.name, Workload: "a", OpsPerSec: s.a, CPUPerOp: s.a / 100, Ops: ops})
	}
	var b bytes.Buffer
	require.NoError(t, writeMarkdown(&b, res))
	out := b.String()
	assert.Contains(t, out, "| workload | coopkv-mlfq | badger | bbolt | coopkv-mlfq ÷ badger | coopkv-mlfq ÷ bbolt |\n|---|---:|---:|---:|---:|---:|\n")
	assert.Contains(t, out, "| load | 100 | 50 | 200 | 2.00 | 0.50 |\n")
	assert.Contains(t, out, "| A: 50% read, 50% update | 300 | 100 | 150 | 3.00 | 2.00 |\n")
	assert.Contains(t, out, "CPU time of the whole process per operation")
	assert.Contains(t, out, "| A | 3.0 | 1.0 | 1.5 |\n")
	assert.Contains(t, out, "| workload | operation | coopkv-mlfq | badger | bbolt |\n")
	assert.Contains(t, out, "| load | INSERT | 9 | 9 | 9 |\n")
	assert.Contains(t, out, "| A | READ | 50 | 40 | 30 |\n| A | UPDATE | 70 | 60 | – |\n")
}

func TestWritePlain(t *testing.T) {
	res := &results{
		Tool: "go-ycsb v1.0.3", Workloads: []string{"e"}, Stores: []storeInfo{{Name: "bbolt"}},
		Phases: []phaseStats{{Store: "bbolt", Workload: "e", OpsPerSec: 1234,
			Ops: []opStats{{Op: "INSERT", Count: 5, P99Us: 77}, {Op: "SCAN", Count: 95, P99Us: 880, Errors: 2}}}},
	}
	var b bytes.Buffer
	require.NoError(t, writePlain(&b, res))
	assert.Regexp(t, `bbolt +e +1234 +INSERT +5 .* 77 `, b.String())
	assert.Regexp(t, `\n +SCAN +95 .* 880 .* 2 *\n`, b.String())
	assert.Regexp(t, `\n +phase +bbolt *\n +load +– *\n +E +– *\n +whole store +– *\n`, b.String(), "no figures, dashes")
	assert.NotContains(t, b.String(), "Write amplification", "no coopkv store")
}

// The memory tables give each store's peak per phase and over its run,
// with the first coopkv store's over the larger peer's; the write-amp
// lines come for coopkv stores only.
func TestWriteMarkdown_Memory(t *testing.T) {
	const mb = 1 << 20
	res := &results{
		Tool: "go-ycsb v1.0.3", Workloads: []string{"c"},
		Stores: []storeInfo{
			{Name: "coopkv-mlfq", Memory: storeMemory{PeakRSS: 150 * mb, PeakSource: sourceRusage},
				Sizes:  &kvSizes{BlockCacheCapacity: 64 * mb, MemTableSize: 8 * mb, RowCacheCapacity: 32 * mb},
				Writes: &writeStats{WALBytes: 10 * mb, FlushedBytes: 8 * mb, CompactedBytes: 2 * mb, WriteAmp: 2}},
			{Name: "badger", Memory: storeMemory{PeakRSS: 300 * mb, PeakSource: sourceRusage}},
			{Name: "bbolt", Memory: storeMemory{PeakRSS: 100 * mb, PeakSource: sourceRusage}},
		},
	}
	for _, s := range []struct {
		name       string
		load, c    int64
		heapC      int64
		ampL, ampC float64
	}{{"coopkv-mlfq", 100, 150, 40, 2.5, 0}, {"badger", 200, 300, 250, 0, 0}, {"bbolt", 50, 100, 3, 0, 0}} {
		var wl, wc *writeStats
		if s.ampL > 0 {
			wl, wc = &writeStats{WriteAmp: s.ampL}, &writeStats{WriteAmp: s.ampC}
		}
		res.Phases = append(res.Phases,
			phaseStats{Store: s.name, Workload: loadPhase, Memory: memStats{PeakRSS: s.load * mb, PeakSource: sourceHWM, GoHeap: 10 * mb}, Writes: wl},
			phaseStats{Store: s.name, Workload: "c", Memory: memStats{PeakRSS: s.c * mb, PeakSource: sourceHWM, GoHeap: s.heapC * mb}, Writes: wc})
	}
	var b bytes.Buffer
	require.NoError(t, writeMarkdown(&b, res))
	out := b.String()
	assert.Contains(t, out, "Peak resident memory (RSS), MiB; per phase the kernel's high-water mark (VmHWM), reset at the phase's start; "+
		"per store its own process's peak (getrusage; --isolate):\n\n")
	assert.Contains(t, out, "| phase | coopkv-mlfq | badger | bbolt | coopkv-mlfq ÷ larger peer |\n|---|---:|---:|---:|---:|\n"+
		"| load | 100 | 200 | 50 | 0.50 |\n| C | 150 | 300 | 100 | 0.50 |\n| whole store | 150 | 300 | 100 | 0.50 |\n")
	assert.Contains(t, out, "| phase | coopkv-mlfq | badger | bbolt |\n|---|---:|---:|---:|\n| load | 10 | 10 | 10 |\n| C | 40 | 250 | 3 |\n")
	assert.Contains(t, out, "\n- coopkv-mlfq: load 2.50, C –; since open 2.00 (WAL 10.0 MiB, flushed 8.0 MiB, compacted 2.0 MiB); "+
		"block cache 64.0 MiB (memtables included), memtable 8.0 MiB, row cache 32.0 MiB.\n")
	assert.NotContains(t, out, "- badger")

	// Without a peer there is no ratio, and a store that did not run a
	// phase shows a dash.
	res.Stores = res.Stores[:1]
	res.Phases = res.Phases[:1]
	b.Reset()
	require.NoError(t, writeMarkdown(&b, res))
	assert.Contains(t, b.String(), "| phase | coopkv-mlfq |\n|---|---:|\n| load | 100 |\n| C | – |\n| whole store | 150 |\n")
}

// The retries line names the phases whose transactions ran again, in both
// outputs, and is absent when none did.
func TestRetriesLine(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	res := &results{
		Tool: "go-ycsb v1.0.3", Workloads: []string{"f"},
		Stores: []storeInfo{{Name: "coopkv-mlfq"}, {Name: "badger-v4"}, {Name: "bbolt"}},
		Phases: []phaseStats{
			{Store: "coopkv-mlfq", Workload: loadPhase, TxnRetries: n(0)},
			{Store: "coopkv-mlfq", Workload: "f", TxnRetries: n(12)},
			{Store: "badger-v4", Workload: "f", TxnRetries: n(3)},
			{Store: "bbolt", Workload: "f"},
		},
	}
	const want = "Transactions run again after a conflict (an update's, within the same operation): coopkv-mlfq f: 12; badger-v4 f: 3.\n"
	for _, write := range []func(*bytes.Buffer, *results) error{
		func(b *bytes.Buffer, res *results) error { return writeMarkdown(b, res) },
		func(b *bytes.Buffer, res *results) error { return writePlain(b, res) },
	} {
		var b bytes.Buffer
		require.NoError(t, write(&b, res))
		assert.Contains(t, b.String(), want)
	}
	res.Phases[1].TxnRetries, res.Phases[2].TxnRetries = n(0), nil
	assert.Empty(t, retriesLine(res))
}

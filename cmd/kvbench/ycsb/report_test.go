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
		res.Phases = append(res.Phases, phaseStats{Store: s.name, Workload: "a", OpsPerSec: s.a, Ops: ops})
	}
	var b bytes.Buffer
	require.NoError(t, writeMarkdown(&b, res))
	out := b.String()
	assert.Contains(t, out, "| workload | coopkv-mlfq | badger | bbolt | coopkv-mlfq ÷ badger | coopkv-mlfq ÷ bbolt |\n|---|---:|---:|---:|---:|---:|\n")
	assert.Contains(t, out, "| load | 100 | 50 | 200 | 2.00 | 0.50 |\n")
	assert.Contains(t, out, "| A: 50% read, 50% update | 300 | 100 | 150 | 3.00 | 2.00 |\n")
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
}

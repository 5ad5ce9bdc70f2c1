package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With --reopen and --timeline both outputs carry the warm-up table (first
// 5 s ÷ steady, with the two rates) and the reopen table; a phase too
// short for the figures, or a store without them, shows a dash.
func TestWriteRestartTables(t *testing.T) {
	tl := func(vs ...float64) *[]float64 { return &vs }
	res := &results{
		Tool: "go-ycsb v1.0.3", Workloads: []string{"c"}, Reopen: true, Timeline: true,
		Stores: []storeInfo{{Name: "coopkv-mlfq"}, {Name: "bbolt"}},
		Phases: []phaseStats{
			{Store: "coopkv-mlfq", Workload: loadPhase, Timeline: tl(), TailOps: 100},
			{Store: "coopkv-mlfq", Workload: "c", Timeline: tl(1, 2, 3), First5s: 41_200, Steady: 150_300,
				Reopen: &reopenStats{CloseSec: 0.0051, OpenSec: 0.0482}},
			{Store: "bbolt", Workload: loadPhase, Timeline: tl(), TailOps: 100},
			{Store: "bbolt", Workload: "c", Timeline: tl(1, 2), Steady: 800,
				Reopen: &reopenStats{CloseSec: 0.0001, OpenSec: 0.00004}},
		},
	}
	var b bytes.Buffer
	require.NoError(t, writeMarkdown(&b, res))
	out := b.String()
	assert.Contains(t, out, " CPUs; each store closed and opened again before each workload (--reopen).\n")
	assert.Contains(t, out, "\n"+warmTitle+"\n\n| phase | coopkv-mlfq | bbolt |\n|---|---:|---:|\n"+
		"| load | – | – |\n| C | 0.27 (41.2 k / 150.3 k) | – (– / 800) |\n")
	assert.Contains(t, out, "\n"+reopenTitle+"\n\n| workload | coopkv-mlfq | bbolt |\n|---|---:|---:|\n"+
		"| C | 53.3 (5.1 + 48.2) | 0.14 (0.10 + 0.04) |\n")

	b.Reset()
	require.NoError(t, writePlain(&b, res))
	assert.Regexp(t, `\n +C +0\.27 \(41\.2 k / 150\.3 k\) +– \(– / 800\) *\n`, b.String())
	assert.Regexp(t, `\n +C +53\.3 \(5\.1 \+ 48\.2\) +0\.14 \(0\.10 \+ 0\.04\) *\n`, b.String())

	// Without the flags, neither table.
	res.Reopen, res.Timeline = false, false
	for i := range res.Phases {
		res.Phases[i].Timeline, res.Phases[i].Reopen, res.Phases[i].First5s, res.Phases[i].Steady = nil, nil, 0, 0
	}
	b.Reset()
	require.NoError(t, writeMarkdown(&b, res))
	assert.NotContains(t, b.String(), "Warm-up")
	assert.NotContains(t, b.String(), "Reopen")
	assert.NotContains(t, b.String(), "--reopen")
}

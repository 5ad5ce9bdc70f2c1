package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWritePlot_Formats(t *testing.T) {
	for _, tc := range []struct {
		file  string
		magic []byte
	}{
		{"latency.png", []byte("\x89PNG\r\n\x1a\n")},
		{"latency.svg", []byte("<svg")},
		{"LATENCY.PNG", []byte("\x89PNG\r\n\x1a\n")},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			require.NoError(t, writePlot(path, sampleReport()))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Greater(t, len(b), 1000)
			assert.True(t, bytes.Contains(b[:min(len(b), 512)], tc.magic), "starts as a %s file", tc.file)
		})
	}
}

func TestWritePlot_Errors(t *testing.T) {
	dir := t.TempDir()
	assert.ErrorContains(t, writePlot(filepath.Join(dir, "x.pdf"), sampleReport()), ".png or .svg")
	assert.ErrorContains(t, writePlot(filepath.Join(dir, "x.png"), &Report{}), "no results")
	assert.ErrorIs(t, writePlot(filepath.Join(dir, "no", "x.png"), sampleReport()), os.ErrNotExist)
}

func TestPlotPanels(t *testing.T) {
	rep := sampleReport()
	rep.Results = append(rep.Results,
		Result{Workload: "soak", Scheduler: "mlfq", Class: "get", Ops: 1},
		Result{Workload: "soak", Scheduler: "mlfq", Class: "update"}, // never ran: left out
	)
	panels := plotPanels(rep)
	var names []string
	for _, p := range panels {
		names = append(names, p.workload+"/"+p.class)
	}
	assert.Equal(t, []string{"noisy/get", "noisy/scan", "soak/get"}, names)
	assert.Len(t, panels[0].results, 2, "a line per scheduler")
	assert.Len(t, panels[1].results, 2, "the scheduler without scans is kept, and drawn without a line")
}

func TestLatencyTicks_Labels(t *testing.T) {
	var labels []string
	for _, tk := range (latencyTicks{}).Ticks(3, 2e6) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	assert.Equal(t, []string{"1µs", "10µs", "100µs", "1ms", "10ms", "100ms", "1s", "10s"}, labels)
}

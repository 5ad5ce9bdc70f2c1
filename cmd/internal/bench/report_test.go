package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

func sampleReport() *Report {
	return &Report{
		Workload: "noisy", Keys: 2000, ValueSize: 100, Workers: 2, DurationS: 0.2,
		Results: []Result{
			{Workload: "noisy", Scheduler: "mlfq", Class: "get", Ops: 1000, OpsPerSec: 5000,
				P50us: 80, P99us: 900, P999us: 2000, MaxUs: 5000},
			{Workload: "noisy", Scheduler: "mlfq", Class: "scan", Ops: 10, OpsPerSec: 50,
				P50us: 12_000, P99us: 20_000, P999us: 20_000, MaxUs: 1_500_000, Errors: 2,
				firstErr: errors.New("kv: busy")},
			{Workload: "noisy", Scheduler: "direct", Class: "get", Ops: 900, OpsPerSec: 4500,
				P50us: 100, P99us: 30_000, P999us: 40_000, MaxUs: 50_000},
			{Workload: "noisy", Scheduler: "direct", Class: "scan"},
		},
	}
}

func TestNewResult(t *testing.T) {
	err := errors.New("boom")
	r := newResult("soak", "fifo", classUpdate, "", summary{
		ops: 10, opsPerSec: 50, percentiles: percentiles{p50: 80 * time.Microsecond, p99: 900 * time.Microsecond,
			p999: 2 * time.Millisecond, max: 5 * time.Millisecond}, errors: 1, firstErr: err,
	})
	assert.Equal(t, Result{
		Workload: "soak", Scheduler: "fifo", Class: "update", Ops: 10, OpsPerSec: 50,
		P50us: 80, P99us: 900, P999us: 2000, MaxUs: 5000, Errors: 1, firstErr: err,
	}, r)
}

func TestNewResult_Paced(t *testing.T) {
	s := summary{
		ops: 1000, opsPerSec: 5000, percentiles: percentiles{p50: time.Millisecond, max: time.Second},
		arrival: arrivalFixed, offered: 20_000,
		service: percentiles{p50: 80 * time.Microsecond, p99: 900 * time.Microsecond, p999: 2 * time.Millisecond, max: 5 * time.Millisecond},
	}
	r := newResult("noisy", "mlfq", classGet, "", s)
	assert.Equal(t, &Pacing{Arrival: "fixed", OfferedPerSec: 20_000, AchievedPct: 25,
		ServiceP50us: 80, ServiceP99us: 900, ServiceP999us: 2000, ServiceMaxUs: 5000}, r.Pacing)
	assert.Equal(t, 1000.0, r.P50us, "the latencies are e2e")

	s.offered = math.Inf(1)
	r = newResult("noisy", "mlfq", classGet, "", s)
	require.NotNil(t, r.Pacing)
	assert.Zero(t, r.Pacing.OfferedPerSec, "an unbounded rate is 0, JSON having no infinity")
	assert.Zero(t, r.Pacing.AchievedPct)
}

// pacedReport is sampleReport with its Gets paced, direct's interrupted.
func pacedReport() *Report {
	rep := sampleReport()
	rep.Results[0].Pacing = &Pacing{Arrival: "fixed", OfferedPerSec: 20_000, AchievedPct: 25,
		ServiceP50us: 40, ServiceP99us: 300, ServiceP999us: 1000, ServiceMaxUs: 4000,
		LateP50us: 30, LateP99us: 600, LateP999us: 1500, LateMaxUs: 2000}
	rep.Results[2].Pacing = &Pacing{Arrival: "fixed", OfferedPerSec: 20_000, AchievedPct: 22.5,
		ServiceP50us: 90, ServiceP99us: 20_000, ServiceP999us: 30_000, ServiceMaxUs: 45_000,
		LateP50us: 10, LateP99us: 10_000, LateP999us: 15_000, LateMaxUs: 20_000}
	rep.Results[2].Interrupted = true
	return rep
}

// tableLines writes rep's table, checks that its lines hold the fields
// of want, in order, and returns them.
func tableLines(t *testing.T, rep *Report, want ...[]string) []string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, rep))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.GreaterOrEqual(t, len(lines), len(want), buf.String())
	for i, w := range want {
		assert.Equal(t, w, strings.Fields(lines[i]), "line %d", i)
	}
	return lines
}

func TestWriteTable_Paced(t *testing.T) {
	lines := tableLines(t, pacedReport(),
		[]string{"workload", "scheduler", "class", "ops/s", "offered/s", "achieved", "p50", "p99", "p99.9", "max", "errors"},
		[]string{"noisy", "mlfq", "get", "e2e", "5000", "20000", "25.0%", "80µs", "900µs", "2.00ms", "5.00ms", "0"},
		[]string{"noisy", "mlfq", "get", "service", "40µs", "300µs", "1.00ms", "4.00ms"},
		[]string{"noisy", "mlfq", "get", "late", "30µs", "600µs", "1.50ms", "2.00ms"},
		[]string{"noisy", "mlfq", "scan", "50", "12.00ms", "20.00ms", "20.00ms", "1.50s", "2"},
		[]string{"noisy", "direct", "get", "e2e", "4500", "20000", "22.5%", "100µs", "30.00ms", "40.00ms", "50.00ms", "0", "(interrupted)"},
		[]string{"noisy", "direct", "get", "service", "90µs", "20.00ms", "30.00ms", "45.00ms", "(interrupted)"},
		[]string{"noisy", "direct", "get", "late", "10µs", "10.00ms", "15.00ms", "20.00ms", "(interrupted)"},
		[]string{"noisy", "direct", "scan", "0", "-", "-", "-", "-", "0"},
	)
	require.Len(t, lines, 10)
	// The service rows' percentiles sit under the e2e rows'.
	maxEnd := strings.Index(lines[1], "5.00ms") + len("5.00ms")
	assert.Equal(t, utf8.RuneCountInString(lines[1][:maxEnd]), utf8.RuneCountInString(lines[2]), "columns are aligned")
	assert.Equal(t, utf8.RuneCountInString(lines[0]), utf8.RuneCountInString(lines[1]), "columns are aligned")
}

// encodeResults writes rep as JSON and returns its results as they
// decode into maps, and into a Report read back.
func encodeResults(t *testing.T, rep *Report) ([]map[string]any, *Report) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, encodeJSON(&buf, rep))
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	var back Report
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Len(t, doc.Results, len(rep.Results))
	return doc.Results, &back
}

func TestWriteJSON_Pacing(t *testing.T) {
	results, rep := encodeResults(t, pacedReport())
	assert.Equal(t, map[string]any{
		"workload": "noisy", "scheduler": "mlfq", "class": "get", "group": "",
		"ops": 1000.0, "ops_per_sec": 5000.0, "p50_us": 80.0, "p99_us": 900.0,
		"p999_us": 2000.0, "max_us": 5000.0, "errors": 0.0,
		"arrival": "fixed", "offered_per_sec": 20_000.0, "achieved_pct": 25.0, "overdue": 0.0,
		"service_p50_us": 40.0, "service_p99_us": 300.0, "service_p999_us": 1000.0, "service_max_us": 4000.0,
		"late_p50_us": 30.0, "late_p99_us": 600.0, "late_p999_us": 1500.0, "late_max_us": 2000.0,
	}, results[0])
	assert.NotContains(t, results[1], "arrival", "a class that is not paced has no pacing fields")
	assert.Equal(t, pacedReport().Results[0].Pacing, rep.Results[0].Pacing, "a report reads back")
	assert.Nil(t, rep.Results[1].Pacing)
}

func TestWriteTable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, sampleReport()))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 6, buf.String())
	assert.Equal(t, []string{"workload", "scheduler", "class", "ops/s", "p50", "p99", "p99.9", "max", "errors"},
		strings.Fields(lines[0]))
	assert.Equal(t, []string{"noisy", "mlfq", "get", "5000", "80µs", "900µs", "2.00ms", "5.00ms", "0"},
		strings.Fields(lines[1]))
	assert.Equal(t, []string{"noisy", "mlfq", "scan", "50", "12.00ms", "20.00ms", "20.00ms", "1.50s", "2"},
		strings.Fields(lines[2]))
	assert.Equal(t, []string{"noisy", "direct", "scan", "0", "-", "-", "-", "-", "0"},
		strings.Fields(lines[4]))
	assert.Equal(t, "noisy mlfq scan: 2 errors, the first: kv: busy", lines[5])
	assert.Equal(t, utf8.RuneCountInString(lines[0]), utf8.RuneCountInString(lines[1]), "columns are aligned")
}

func TestWriteTable_GroupColumnOnlyWithGroups(t *testing.T) {
	rep := sampleReport()
	rep.Results[0].Group = "tenant-a"
	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, rep))
	lines := strings.Split(buf.String(), "\n")
	assert.Equal(t, "group", strings.Fields(lines[0])[3])
	assert.Equal(t, "tenant-a", strings.Fields(lines[1])[3])
}

func TestFormatMicros(t *testing.T) {
	for us, want := range map[float64]string{
		0: "-", 0.4: "0µs", 80: "80µs", 999.4: "999µs", 1000: "1.00ms", 12_345: "12.35ms",
		999_990: "999.99ms", 1e6: "1.00s", 62.5e6: "62.50s",
	} {
		assert.Equal(t, want, formatMicros(us), "%v µs", us)
	}
}

func TestWriteJSON_Shape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.json")
	require.NoError(t, writeJSON(path, sampleReport()))
	b, err := os.ReadFile(path)
	require.NoError(t, err)

	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, map[string]any{
		"workload": "noisy", "keys": 2000.0, "value_size": 100.0, "workers": 2.0, "duration_s": 0.2,
		"results": doc["results"],
	}, doc)
	results := doc["results"].([]any)
	require.Len(t, results, 4)
	assert.Equal(t, map[string]any{
		"workload": "noisy", "scheduler": "mlfq", "class": "scan", "group": "",
		"ops": 10.0, "ops_per_sec": 50.0, "p50_us": 12_000.0, "p99_us": 20_000.0,
		"p999_us": 20_000.0, "max_us": 1_500_000.0, "errors": 2.0,
	}, results[1])
}

func TestWriteJSON_BadPath(t *testing.T) {
	err := writeJSON(filepath.Join(t.TempDir(), "no", "such", "dir.json"), sampleReport())
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestWriteTable_Interrupted(t *testing.T) {
	rep := sampleReport()
	rep.Results[2].Interrupted = true
	rep.Results[3].Interrupted = true
	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, rep))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 6, buf.String())
	for i, marked := range []bool{false, false, false, true, true} {
		assert.Equal(t, marked, strings.HasSuffix(lines[i], "  (interrupted)"), "line %d: %q", i, lines[i])
	}
	assert.Equal(t, []string{"noisy", "direct", "get", "4500", "100µs", "30.00ms", "40.00ms", "50.00ms", "0", "(interrupted)"},
		strings.Fields(lines[3]))
	assert.Equal(t, utf8.RuneCountInString(lines[0]), utf8.RuneCountInString(lines[1]), "the columns stay aligned")
}

func TestWriteInterruption(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop interruption
		want string
	}{
		{"load", interruption{phase: "the load"},
			"interrupted (signal interrupt) during the load, before it measured anything"},
		{"warm-up", interruption{phase: "mlfq get warm-up"},
			"interrupted (signal interrupt) during mlfq get warm-up, before it measured anything"},
		{"measured", interruption{phase: "mlfq get", elapsed: 1234567 * time.Microsecond, of: 5 * time.Second},
			"interrupted (signal interrupt) 1.235s into the 5s of mlfq get, whose figures, marked (interrupted), cover that part"},
		{"just after", interruption{phase: "mlfq get", elapsed: 5 * time.Second, of: 5 * time.Second},
			"interrupted (signal interrupt) at the end of mlfq get"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, writeInterruption(&buf, tc.stop, cli.SignalError{Sig: os.Interrupt}))
			assert.Equal(t, "\n"+tc.want+"\n", buf.String())
		})
	}
}

// TestWriteJSON_Interrupted checks that the interrupted fields appear
// only when set, so that a complete run's JSON keeps its shape.
func TestWriteJSON_Interrupted(t *testing.T) {
	rep := sampleReport()
	rep.Interrupted = true
	rep.Results[3].Interrupted = true
	var buf bytes.Buffer
	require.NoError(t, encodeJSON(&buf, rep))
	var doc struct {
		Interrupted *bool            `json:"interrupted"`
		Results     []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	require.NotNil(t, doc.Interrupted)
	assert.True(t, *doc.Interrupted)
	require.Len(t, doc.Results, 4)
	assert.NotContains(t, doc.Results[2], "interrupted")
	assert.Equal(t, true, doc.Results[3]["interrupted"])
}

// TestWriteTable_RowsColumnOnlyWithRows: rows/s is a column when a
// result read rows, filled for those that did.
func TestWriteTable_RowsColumnOnlyWithRows(t *testing.T) {
	rep := sampleReport()
	rep.Results[1].Rows, rep.Results[1].RowsPerSec = 1000, 5000
	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, rep))
	lines := strings.Split(buf.String(), "\n")
	assert.Equal(t, []string{"workload", "scheduler", "class", "ops/s", "rows/s", "p50", "p99", "p99.9", "max", "errors"},
		strings.Fields(lines[0]))
	assert.Equal(t, []string{"noisy", "mlfq", "scan", "50", "5000", "12.00ms", "20.00ms", "20.00ms", "1.50s", "2"},
		strings.Fields(lines[2]))
	assert.Equal(t, []string{"noisy", "mlfq", "get", "5000", "80µs", "900µs", "2.00ms", "5.00ms", "0"},
		strings.Fields(lines[1]), "a Get has no rows")
	assert.Equal(t, utf8.RuneCountInString(lines[0]), utf8.RuneCountInString(lines[1]), "columns are aligned")
}

// TestWriteTable_Setup: a simulated disk and a block cache size are
// written above the table, the latency as a simulated disk's; a run at
// the defaults has no such line.
func TestWriteTable_Setup(t *testing.T) {
	rep := sampleReport()
	rep.SimulatedDiskLatencyUs, rep.CacheSizeBytes = 200, 16<<20
	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, rep))
	lines := strings.Split(buf.String(), "\n")
	assert.Equal(t, "store: simulated disk latency 200µs on every table read (a nanosleep in ReadAt; "+
		"the page cache answers the read: not a real disk), block cache 16 MiB", lines[0])
	assert.Equal(t, "workload", strings.Fields(lines[1])[0])

	rep.SimulatedDiskLatencyUs = 0
	buf.Reset()
	require.NoError(t, writeTable(&buf, rep))
	assert.True(t, strings.HasPrefix(buf.String(), "store: block cache 16 MiB\n"), buf.String())

	buf.Reset()
	require.NoError(t, writeTable(&buf, sampleReport()))
	assert.True(t, strings.HasPrefix(buf.String(), "workload "), "no line at the defaults")
}

// TestWriteJSON_Setup: the setup's fields appear only when set, so that
// a run at the defaults keeps its shape.
func TestWriteJSON_Setup(t *testing.T) {
	rep := sampleReport()
	rep.SimulatedDiskLatencyUs, rep.CacheSizeBytes = 1000, 16<<20
	var buf bytes.Buffer
	require.NoError(t, encodeJSON(&buf, rep))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &doc))
	assert.Equal(t, 1000.0, doc["simulated_disk_latency_us"])
	assert.Equal(t, float64(16<<20), doc["cache_size_bytes"])
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{
		1: "1 B", 1000: "1000 B", 1024: "1 KiB", 1536: "1536 B", 16 << 20: "16 MiB", 3 << 30: "3 GiB", 1<<30 + 1<<20: "1025 MiB",
	} {
		assert.Equal(t, want, formatBytes(n), "%d", n)
	}
}

func TestNewResult_Txns(t *testing.T) {
	r := newResult("txn", "mlfq", classTransfer, "", summary{ops: 100, opsPerSec: 500,
		txn: true, retries: 30, failures: 2, conflicts: 32, conflictsPerSec: 160})
	assert.Equal(t, &Txns{Conflicts: 32, ConflictsPerSec: 160, Retries: 30, Failures: 2}, r.Txns)
	assert.Equal(t, &Txns{}, newResult("txn", "mlfq", classTransfer, "", summary{txn: true}).Txns,
		"transactions that met no conflict say so")
	assert.Nil(t, newResult("noisy", "mlfq", classGet, "", summary{ops: 1}).Txns, "other classes have none")
}

// txnReport is pacedReport's mlfq results, its Gets paced, and a
// transfer row after them.
func txnReport() *Report {
	rep := pacedReport()
	rep.Results = append(rep.Results[:2:2], Result{Workload: "txn", Scheduler: "mlfq", Class: "transfer", Ops: 900, OpsPerSec: 4500,
		P50us: 20, P99us: 3_000, P999us: 40_000, MaxUs: 90_000,
		Txns: &Txns{Conflicts: 120, ConflictsPerSec: 600, Retries: 117, Failures: 3}})
	return rep
}

// TestWriteTable_Txns: conflicts/s, retries and failures are columns when
// a result is of transactions, filled for those that are.
func TestWriteTable_Txns(t *testing.T) {
	lines := tableLines(t, txnReport(),
		[]string{"workload", "scheduler", "class", "ops/s", "offered/s", "achieved", "conflicts/s", "retries", "failures", "p50", "p99", "p99.9", "max", "errors"},
		[]string{"noisy", "mlfq", "get", "e2e", "5000", "20000", "25.0%", "80µs", "900µs", "2.00ms", "5.00ms", "0"},
		[]string{"noisy", "mlfq", "get", "service", "40µs", "300µs", "1.00ms", "4.00ms"},
		[]string{"noisy", "mlfq", "get", "late", "30µs", "600µs", "1.50ms", "2.00ms"},
		[]string{"noisy", "mlfq", "scan", "50", "12.00ms", "20.00ms", "20.00ms", "1.50s", "2"},
		[]string{"txn", "mlfq", "transfer", "4500", "600", "117", "3", "20µs", "3.00ms", "40.00ms", "90.00ms", "0"},
	)
	require.Len(t, lines, 7)
	for _, i := range []int{1, 4, 5} {
		assert.Equal(t, utf8.RuneCountInString(lines[0]), utf8.RuneCountInString(lines[i]), "line %d: the columns are aligned", i)
	}
	assert.Equal(t, strings.Index(lines[0], "failures")+len("failures"), strings.Index(lines[5], " 3 ")+2, "failures under their heading")

	var buf bytes.Buffer
	require.NoError(t, writeTable(&buf, sampleReport()))
	assert.NotContains(t, buf.String(), "conflicts/s", "no transactions, no such columns")
}

func TestWriteJSON_Txns(t *testing.T) {
	results, rep := encodeResults(t, txnReport())
	assert.Equal(t, map[string]any{
		"workload": "txn", "scheduler": "mlfq", "class": "transfer", "group": "",
		"ops": 900.0, "ops_per_sec": 4500.0, "p50_us": 20.0, "p99_us": 3000.0,
		"p999_us": 40_000.0, "max_us": 90_000.0, "errors": 0.0,
		"conflicts": 120.0, "conflicts_per_sec": 600.0, "retries": 117.0, "failures": 3.0,
	}, results[2])
	assert.NotContains(t, results[0], "conflicts", "a class that is not of transactions has no such fields")
	assert.Equal(t, txnReport().Results[2].Txns, rep.Results[2].Txns, "a report reads back")
	assert.Nil(t, rep.Results[0].Txns)
}

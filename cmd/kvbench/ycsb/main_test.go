package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Under --isolate the command re-runs its own executable for each
	// store: in a test, this binary, which then runs the command, not the
	// tests.
	if slices.Contains(os.Args[1:], "--"+childFlag) {
		main()
		os.Exit(0)
	}
	// badger v1.5.4 (the version go-ycsb's binding is built for) leaves a
	// watermark goroutine per DB running after Close: its bug, not ours.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/dgraph-io/badger/y.(*WaterMark).process"))
}

// execute runs the command in-process with args and returns what it wrote
// to stdout and to stderr, and its error.
func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// Every store loads, then runs workloads A and E, and each phase measures
// operations of the kinds its workload does.
func TestRun_EveryStore(t *testing.T) {
	if raceEnabled {
		t.Skip("go-ycsb v1.0.3 and bolt v1.3.1 are not race-clean (see race_test.go)")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "ycsb.json")
	stores := storeNames()
	// Each store in a child process of its own (--isolate, the default);
	// the row cache's size checks that the children get -p.
	stdout, stderr, err := execute(t,
		"--stores", strings.Join(stores, ","), "--workloads", "e,a",
		"--records", "200", "--operations", "500",
		"--dir", dir, "--json", jsonPath, "--markdown", "-p", "coopkv.rowcache=1048576")
	require.NoError(t, err, stderr)

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var res results
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, "go-ycsb v1.0.3", res.Tool)
	assert.Equal(t, []string{"a", "e"}, res.Workloads, "workloads run in YCSB's order")
	assert.True(t, res.Isolated)
	require.Len(t, res.Stores, len(stores))
	for _, si := range res.Stores {
		if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
			assert.Equal(t, sourceRusage, si.Memory.PeakSource, si.Name)
		}
		assert.Positive(t, si.Memory.StartRSS, si.Name)
		// A child's peak is its own: a fresh process's baseline plus its
		// store, never what an earlier store left.
		assert.Greater(t, si.Memory.PeakRSS, si.Memory.StartRSS, si.Name)
		if !strings.HasPrefix(si.Name, "coopkv-") {
			assert.Nil(t, si.Sizes, si.Name)
			assert.Nil(t, si.Writes, si.Name)
		} else if assert.NotNil(t, si.Sizes, si.Name) && assert.NotNil(t, si.Writes, si.Name) {
			assert.Equal(t, int64(1<<20), si.Sizes.RowCacheCapacity, "%s: -p reaches the child", si.Name)
			assert.Positive(t, si.Sizes.BlockCacheCapacity, si.Name)
			assert.Positive(t, si.Sizes.MemTableSize, si.Name)
			assert.GreaterOrEqual(t, si.Writes.WriteAmp, 1.0, si.Name)
		}
	}

	wantOps := map[string][]string{
		loadPhase: {"INSERT"},
		"a":       {"READ", "UPDATE"},
		"e":       {"INSERT", "SCAN"},
	}
	wantN := map[string]int64{loadPhase: 200, "a": 500, "e": 500}
	for _, store := range stores {
		for _, w := range []string{loadPhase, "a", "e"} {
			ps, ok := res.phase(store, w)
			require.True(t, ok, "%s %s ran", store, w)
			assert.Equal(t, wantN[w], ps.Operations)
			assert.Positive(t, ps.OpsPerSec, "%s %s", store, w)
			if runtime.GOOS == "linux" {
				assert.Positive(t, ps.CPUPerOp, "%s %s: the process's CPU time", store, w)
			}
			var measured int64
			for _, op := range wantOps[w] {
				o, ok := ps.op(op)
				if assert.True(t, ok, "%s %s measured %s", store, w, op) {
					assert.Positive(t, o.Count, "%s %s %s", store, w, op)
					assert.Positive(t, o.OpsPerSec, "%s %s %s", store, w, op)
					assert.GreaterOrEqual(t, o.P99Us, o.P50Us)
					measured += o.Count + o.Errors
				}
			}
			assert.Equal(t, wantN[w], measured, "%s %s: every operation measured once", store, w)
			// A few misses are YCSB's (its zipfian key range ends one past
			// the last record) and badger's (a transaction conflict between
			// two updaters of a key); a broken binding fails them all.
			assert.Less(t, ps.Errors*10, ps.Operations, "%s %s: %d failed", store, w, ps.Errors)
			checkPhaseMemory(t, ps)
			// The bindings built on internal/binding count the updates
			// they ran again (bbolt's and pebble's never do: one writer at
			// a time, a lock per key); go-ycsb's own have none to count.
			retrying := strings.HasPrefix(store, "coopkv-") || slices.Contains([]string{"badger-v4", "bbolt", "pebble"}, store)
			assert.Equal(t, retrying, ps.TxnRetries != nil, "%s %s: txn_retries", store, w)
			si := res.Stores[slices.Index(res.storeNames(), store)]
			assert.GreaterOrEqual(t, si.Memory.PeakRSS, ps.Memory.PeakRSS, "%s %s: the store's peak is its phases' at least", store, w)
			if !strings.HasPrefix(store, "coopkv-") {
				assert.Nil(t, ps.Caches, "%s has no coopkv caches", store)
			} else if assert.NotNil(t, ps.Caches, "%s %s", store, w) && w == "a" {
				// Every READ looks in the row cache once; an UPDATE reads
				// in a transaction, which counts a hit when it is served
				// from the cache and nothing when it reads its snapshot.
				// (200 records stay in the memtable: the block cache may
				// see no lookup.)
				c := ps.Caches
				read, _ := ps.op("READ")
				update, _ := ps.op("UPDATE")
				looked := c.RowCacheHits + c.RowCacheMisses
				assert.GreaterOrEqual(t, looked, read.Count+read.Errors, "%s %s", store, w)
				assert.LessOrEqual(t, looked, read.Count+read.Errors+update.Count+update.Errors, "%s %s", store, w)
			}
			if !strings.HasPrefix(store, "coopkv-") {
				assert.Nil(t, ps.Writes, "%s has no coopkv writes", store)
			} else if assert.NotNil(t, ps.Writes, "%s %s", store, w) {
				// Every phase here writes: the load and E insert, A updates.
				// The WAL takes every record written, framing on top.
				wr := ps.Writes
				if w == loadPhase {
					assert.GreaterOrEqual(t, wr.WALBytes, int64(200*10*100), "%s: the load's records reach the WAL", store)
				}
				assert.Positive(t, wr.WALBytes, "%s %s", store, w)
				assert.GreaterOrEqual(t, wr.WriteAmp, 1.0, "%s %s", store, w)
				assert.GreaterOrEqual(t, wr.WriteAmpSinceOpen, 1.0, "%s %s", store, w)
			}
		}
	}

	assert.Contains(t, stdout, "| workload | "+strings.Join(stores, " | ")+
		" | coopkv-direct ÷ badger | coopkv-direct ÷ badger-v4 | coopkv-direct ÷ bbolt | coopkv-direct ÷ bolt | coopkv-direct ÷ pebble |")
	assert.Contains(t, stdout, "| E | SCAN |")
	assert.Contains(t, stdout, "| A | UPDATE |")
	assert.Contains(t, stderr, "[bbolt] e: ")
	assert.Contains(t, stderr, "[pebble] e: ")
	assert.Contains(t, stdout, "| phase | "+strings.Join(stores, " | ")+" | coopkv-direct ÷ larger peer |\n")
	assert.Regexp(t, fmt.Sprintf(`\n\| whole store \|( \d+ \|){%d} \d+\.\d\d \|\n`, len(stores)), stdout)
	assert.Regexp(t, `\n- coopkv-mlfq: load \d+\.\d\d, A \d+\.\d\d, E \d+\.\d\d; since open \d+\.\d\d \(WAL `, stdout)
	assert.Regexp(t, `\[coopkv-mlfq\] sizes in force: block cache [\d.]+ MiB \(memtables included\), memtable [\d.]+ MiB, row cache 1\.0 MiB\n`, stderr)
	assert.Regexp(t, `\[bbolt\] peak RSS [\d.]+ MiB \(getrusage\)`, stderr)
}

// checkPhaseMemory checks that a phase's memory figures are there and
// agree with each other.
func checkPhaseMemory(t *testing.T, ps *phaseStats) {
	t.Helper()
	m := ps.Memory
	what := ps.Store + " " + ps.Workload
	assert.Positive(t, m.StartRSS, what)
	assert.GreaterOrEqual(t, m.Samples, 2, "%s: the start and the end at least", what)
	assert.GreaterOrEqual(t, m.SampledPeakRSS, max(m.StartRSS, m.EndRSS), what)
	assert.GreaterOrEqual(t, m.PeakRSS, m.SampledPeakRSS, what)
	assert.Positive(t, m.GoHeap, what)
	assert.Positive(t, m.GoRuntime, what)
	if runtime.GOOS == "linux" {
		assert.Contains(t, []string{sourceHWM, sourceStatm}, m.PeakSource, what)
		assert.Positive(t, m.SampledPeakAnon, what)
		assert.LessOrEqual(t, m.SampledPeakAnon, m.SampledPeakRSS, what)
	}
}

// Without --isolate the stores share this process: a store's peak is its
// phases' largest. The load, into a 32 MiB block cache (4 MiB memtables),
// writes more than the memtables hold, so it flushes before it ends and
// its write amplification counts the flushes.
func TestRun_InProcess(t *testing.T) {
	if raceEnabled {
		t.Skip("go-ycsb v1.0.3 is not race-clean (see race_test.go)")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "ycsb.json")
	stdout, stderr, err := execute(t, "--isolate=false",
		"--stores", "coopkv-mlfq", "--workloads", "c",
		"--records", "20000", "--operations", "100", "-p", "coopkv.blockcache=33554432",
		"--dir", dir, "--json", jsonPath)
	require.NoError(t, err, stderr)

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var res results
	require.NoError(t, json.Unmarshal(b, &res))
	assert.False(t, res.Isolated)
	require.Len(t, res.Stores, 1)
	si := res.Stores[0]
	require.Len(t, res.Phases, 2)
	var peak int64
	for i := range res.Phases {
		checkPhaseMemory(t, &res.Phases[i])
		peak = max(peak, res.Phases[i].Memory.PeakRSS)
	}
	assert.Equal(t, sourcePhases, si.Memory.PeakSource)
	assert.Equal(t, peak, si.Memory.PeakRSS)

	require.NotNil(t, si.Sizes)
	assert.Equal(t, int64(32<<20), si.Sizes.BlockCacheCapacity)
	assert.Positive(t, si.Sizes.MemTableSize)
	assert.Less(t, si.Sizes.MemTableSize*4, int64(20000*10*100), "the load outgrows the memtables")

	load, ok := res.phase("coopkv-mlfq", loadPhase)
	require.True(t, ok)
	wr := load.Writes
	require.NotNil(t, wr)
	assert.GreaterOrEqual(t, wr.WALBytes, int64(20000*10*100))
	assert.Positive(t, wr.FlushedBytes, "writes stall at four full memtables until a flush ends")
	assert.Greater(t, wr.WriteAmp, 1.0)
	assert.InDelta(t, float64(wr.WALBytes+wr.FlushedBytes+wr.CompactedBytes)/float64(wr.WALBytes), wr.WriteAmp, 1e-9)
	require.NotNil(t, si.Writes)
	assert.GreaterOrEqual(t, si.Writes.FlushedBytes, wr.FlushedBytes, "since open counts the load's flushes")

	assert.Regexp(t, `\n +whole store +\d+ *\n`, stdout, "the plain table has the peaks")
	assert.Regexp(t, `\n  coopkv-mlfq: load \d+\.\d\d, C (–|\d+\.\d\d); since open `, stdout)
	assert.Regexp(t, `\[coopkv-mlfq\] peak RSS [\d.]+ MiB \(phases\)`, stderr)
}

func TestRoot_Validate(t *testing.T) {
	_, _, err := execute(t, "--stores", "coopkv-mlfq,leveldb,coopkv-mlfq", "--workloads", "a,g",
		"--threads", "0", "--records", "5", "--operations", "0", "-p", "novalue")
	require.Error(t, err)
	for _, want := range []string{`unknown store "leveldb"`, `store "coopkv-mlfq" named twice`, `unknown workload "g"`,
		"--threads 0", "--operations 0", `--prop "novalue"`} {
		assert.ErrorContains(t, err, want)
	}
	_, _, err = execute(t, "--records", "4", "--threads", "8")
	assert.ErrorContains(t, err, "--records 4: want at least --threads (8)")
}

func TestInRunOrder(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c", "f", "d", "e"}, inRunOrder(splitList("a, b,c,D,e,f,")))
	assert.Equal(t, []string{"c", "e"}, inRunOrder([]string{"e", "c"}))
}

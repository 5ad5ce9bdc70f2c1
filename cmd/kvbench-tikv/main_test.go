package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctikv "github.com/tikv/client-go/v2/tikv"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/kv/tikv"
)

func TestMain(m *testing.M) {
	// The mock cluster's in-memory goleveldb leaves its memory-pool
	// drainer running after Close (client-go's known leak); nothing else
	// may outlive a test.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/pingcap/goleveldb/leveldb.(*DB).mpoolDrain"))
}

// run runs the command built by newCommand(fn) in-process with args and
// returns what it wrote to stdout and stderr, and its error. (runTiKV
// serialises its writes to stderr.)
func run(t *testing.T, fn func(ctx context.Context, cfg *config, w bench.Workload, out, errOut io.Writer) error, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newCommand(fn)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// tiny makes a run CI-sized: a small store, short phases, few clients.
var tiny = []string{"--mock", "--keys", "2000", "--duration", "300ms", "--warmup", "0", "--json", "-", "-q"}

func TestMock_WorkloadsReportTheStoresRows(t *testing.T) {
	for name, args := range map[string][]string{
		"the default (noisy)": {"--scanners", "1", "--clients", "1", "--long-scan-len", "200", "--no-quiet"},
		"cop":                 {"cop", "--scanners", "1", "--clients", "1", "--long-scan-len", "200"},
		// One phase (tiny has no warm-up): the audit after it reads every
		// account in a Txn, and the run fails if money was lost or made.
		"txn": {"txn", "--accounts", "16", "--clients", "4"},
	} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, err := run(t, runTiKV, append(args, tiny...)...)
			require.NoError(t, err, "stderr: %s", stderr)
			var rep bench.Report
			require.NoError(t, json.Unmarshal([]byte(stdout), &rep), "--json - writes the report to stdout")
			require.NotEmpty(t, rep.Results)
			classes := map[string]bool{}
			for _, r := range rep.Results {
				assert.Equal(t, labelMock, r.Scheduler, "one row set, the store's: no scheduler")
				assert.Positive(t, r.Ops, "%s %s: operations", r.Workload, r.Class)
				assert.Zero(t, r.Errors, "%s %s: errors", r.Workload, r.Class)
				classes[r.Workload+" "+r.Class] = true
			}
			assert.Contains(t, stderr, "workload  scheduler", "the table, on stderr beside --json -")
			assert.Contains(t, stderr, labelMock)
			switch name {
			case "cop":
				assert.True(t, classes["cop cop"], "the coprocessor ran in the client's pool: %v", classes)
				assert.True(t, classes["cop-scan scan"], "and its baseline: %v", classes)
			case "txn":
				assert.True(t, classes["txn transfer"], "transfers in the store's transactions: %v", classes)
				require.NotNil(t, rep.Results[0].Txns, "with their conflicts, retries and failures")
				assert.Equal(t, rep.Results[0].Retries+rep.Results[0].Failures, rep.Results[0].Conflicts)
				assert.Contains(t, stderr, "txn tikv-mock: the 16 accounts hold 16000 = 16 × 1000 after the phase: ok")
			default:
				assert.True(t, classes["noisy scan"] && classes["noisy get"], "noisy's gets and scans: %v", classes)
			}
		})
	}
}

func TestMock_SplitIntoRegions(t *testing.T) {
	cfg := &config{prefix: "p/", mock: true}
	cfg.Keys = 1000
	key := func(n int64) string { return "p/" + string(bench.Key(n)) }
	assert.Equal(t, []string{"p/soak/", key(0), key(250), key(500), key(750)},
		toStrings(mockSplits(cfg.prefix, cfg.Keys)), "the soak's keys, then the loaded keys and their quarters, in order")
	assert.Equal(t, []string{"p/soak/", key(0), key(1)}, toStrings(mockSplits("p/", 2)), "no split twice")

	st, f, err := openMock(cfg, nil)
	require.NoError(t, err)
	require.Nil(t, f, "no faults unless asked")
	defer func() { require.NoError(t, st.Close()) }()
	regions := map[uint64]bool{}
	for _, k := range [][]byte{[]byte("soak/1"), bench.Key(0), bench.Key(300), bench.Key(600), bench.Key(999)} {
		loc, err := st.KVStore().GetRegionCache().LocateKey(ctikv.NewBackofferWithVars(t.Context(), 1000, nil), append([]byte("p/"), k...))
		require.NoError(t, err)
		regions[loc.Region.GetID()] = true
	}
	assert.Len(t, regions, 5, "each of those keys in a region of its own")
}

func toStrings(bs [][]byte) []string {
	var ss []string
	for _, b := range bs {
		ss = append(ss, string(b))
	}
	return ss
}

func TestPD_UnreachableFailsByTheTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	start := time.Now()
	stdout, _, err := run(t, runTiKV, "--pd", addr, "--open-timeout", "1s", "get", "--keys", "10")
	elapsed := time.Since(start)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no PD answered at --pd "+addr+" within --open-timeout 1s")
	assert.Equal(t, 1, exitStatus(err), "a failure, not a usage error")
	assert.Empty(t, stdout, "no results")
	// Generous: what is checked is that the connecting is bound at all
	// (client-go's own constructor blocks ~100 s here).
	assert.Less(t, elapsed, 30*time.Second)
}

func TestExecute_InterruptedWhileConnecting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Ctrl-C before PD answers
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 130, execute(ctx, []string{"--pd", addr, "get"}, &stdout, &stderr), "as an interrupted kvbench")
	assert.Equal(t, "kvbench-tikv: interrupted by context canceled while connecting to PD\n", stderr.String())
	assert.Empty(t, stdout.String())
}

func TestExecute_UsageErrorExitsTwo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, execute(t.Context(), []string{"get"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "kvbench-tikv: no cluster: give --pd")
	assert.Equal(t, 0, execute(t.Context(), []string{"--help"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "kvbench-tikv --pd 127.0.0.1:2379 noisy --duration 30s", "--help shows the README's command")
}

// noRun is a runFunc that records what it was given and runs nothing.
type noRun struct {
	cfg *config
	w   bench.Workload
}

func (n *noRun) run(_ context.Context, cfg *config, w bench.Workload, _, _ io.Writer) error {
	n.cfg, n.w = cfg, w
	return nil
}

func TestFlags_WhatTheRunIsGiven(t *testing.T) {
	var n noRun
	_, _, err := run(t, n.run, "--pd", " 10.0.0.1:2379, ,10.0.0.2:2379", "--prefix", "b/", "--gc", "scan", "--scan-len", "7")
	require.NoError(t, err)
	require.NotNil(t, n.w)
	assert.Equal(t, "scan", n.w.Name())
	assert.Equal(t, []string{"10.0.0.1:2379", "10.0.0.2:2379"}, n.cfg.pd, "trimmed, empty entries dropped")
	assert.Equal(t, []string{labelTiKV}, n.cfg.Schedulers, "one run, labelled tikv")
	opts := n.cfg.options(nil)
	assert.Equal(t, []byte("b/"), opts.Prefix)
	assert.Zero(t, opts.GCLifetime, "--gc: the store's default lifetime")

	n = noRun{}
	_, _, err = run(t, n.run, "--mock", "--workers", "3")
	require.NoError(t, err)
	assert.Equal(t, bench.DefaultWorkload, n.w.Name(), "no workload named: the default")
	assert.Equal(t, []string{labelMock}, n.cfg.Schedulers)
	opts = n.cfg.options(nil)
	assert.Negative(t, opts.GCLifetime, "without --gc the store runs no GC")
	assert.Equal(t, []byte(defaultPrefix), opts.Prefix)
	assert.Equal(t, 3, opts.Workers)
}

func TestFlags_UsageErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want []string
	}{
		"no cluster":          {[]string{"get"}, []string{"no cluster: give --pd"}},
		"both":                {[]string{"--mock", "--pd", "h:1", "get"}, []string{"--pd and --mock: give one"}},
		"a bad address":       {[]string{"--pd", "nohost", "get"}, []string{`--pd "nohost": want HOST:PORT`}},
		"every problem":       {[]string{"--prefix", "", "--open-timeout", "0s", "--keys", "0", "get"}, []string{"no cluster", "--prefix", "--open-timeout", "--keys"}},
		"groups":              {[]string{"--mock", "groups"}, []string{"groups measures each resource group's RU", "run it with kvbench"}},
		"groups-steps":        {[]string{"--mock", "groups-steps"}, []string{"groups-steps measures"}},
		"no schedulers here":  {[]string{"--mock", "--schedulers", "mlfq", "get"}, []string{"unknown flag: --schedulers"}},
		"an unknown workload": {[]string{"--mock", "ycsb-a"}, []string{`unknown workload "ycsb-a"`, "noisy"}},
		"an argument":         {[]string{"--mock", "get", "x"}, []string{`unexpected argument "x" (kvbench-tikv get takes only flags)`}},
	} {
		t.Run(name, func(t *testing.T) {
			var n noRun
			_, _, err := run(t, n.run, tc.args...)
			require.Error(t, err)
			for _, want := range tc.want {
				assert.ErrorContains(t, err, want)
			}
			assert.Equal(t, 2, exitStatus(err))
			assert.Nil(t, n.w, "nothing ran")
		})
	}
}

func TestCommands_EveryWorkload(t *testing.T) {
	cmd := newCommand(runTiKV)
	var subs []string
	for _, c := range cmd.Commands() {
		subs = append(subs, c.Name())
	}
	var names []string
	for _, w := range bench.Workloads() {
		names = append(names, w.Name())
	}
	assert.ElementsMatch(t, names, subs, "a subcommand per workload, as kvbench has")
	assert.Contains(t, cmd.PersistentFlags().Lookup("mock").Usage, "not TiKV", "--help says what --mock's figures measure")
}

// --faults: three stores, the same regions, and stores stopping, leaders
// moving and regions splitting and merging while the store is used: each
// call ends near its deadline, every acknowledged write is there, scans
// read every key once in order, and the store serves again once the faults
// stop.
func TestOpenMock_Faults(t *testing.T) {
	cfg := &config{prefix: "p/", mock: true, faults: true, faultEvery: 100 * time.Millisecond,
		faultDown: 200 * time.Millisecond, faultElect: 50 * time.Millisecond, faultSplit: 10 * time.Millisecond}
	cfg.Keys = 1000
	st, f, err := openMock(cfg, nil)
	require.NoError(t, err)
	require.NotNil(t, f)
	defer func() { require.NoError(t, st.Close()) }()
	assert.Len(t, f.c.GetAllStores(), 3)
	var acked []string
	deadline := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		k := string(bench.Key(int64(i * 7 % 1000)))
		b := st.NewBatch()
		b.Set([]byte(k), []byte("v"))
		start := time.Now()
		err := st.Write(ctx, b)
		if err == nil {
			acked = append(acked, k)
			_, err = st.Get(ctx, []byte(k))
		}
		if err == nil {
			_, err = scanKeys(ctx, st)
		}
		cancel()
		assert.Less(t, time.Since(start), 2*time.Second, "each call ends near its deadline")
		if err != nil {
			assert.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, tikv.ErrUnavailable), "%v", err)
		}
	}
	summary := f.Stop()
	t.Log(summary)
	assert.Contains(t, summary, "faults: ")
	assert.Positive(t, f.stopped, summary)
	assert.Positive(t, f.splits, summary)
	assert.Positive(t, f.merges, summary)
	for _, r := range f.c.GetAllRegions() {
		assert.Len(t, r.Meta.GetPeers(), 3, "a peer on each store")
	}
	require.NotEmpty(t, acked)
	keys, err := scanKeys(context.Background(), st)
	require.NoError(t, err, "the cluster serves again")
	slices.Sort(acked)
	assert.Equal(t, slices.Compact(acked), keys, "every acknowledged key, once, in order")
}

// scanKeys reads every key of st in order.
func scanKeys(ctx context.Context, st *tikv.Store) ([]string, error) {
	it := st.Scan(ctx, nil, nil, nil)
	var keys []string
	for it.Next() {
		keys = append(keys, string(it.Key()))
	}
	err := it.Err()
	return keys, errors.Join(err, it.Close())
}

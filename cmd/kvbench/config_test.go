package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parse runs the command's flag handling on args without running a
// benchmark and returns the config and the workload the run would have
// had.
func parse(t *testing.T, args ...string) (*config, bench.Workload, error) {
	t.Helper()
	var got *config
	var workload bench.Workload
	cmd := newCommand(func(_ context.Context, cfg *config, w bench.Workload, _, _ io.Writer) error {
		got, workload = cfg, w
		return nil
	})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	return got, workload, cmd.Execute()
}

func TestConfig_Defaults(t *testing.T) {
	cfg, w, err := parse(t)
	require.NoError(t, err)
	assert.Equal(t, "noisy", w.Name(), "a bare kvbench runs noisy")
	assert.Equal(t, &config{
		Config: bench.Config{
			Keys:       200_000,
			ValueSize:  100,
			Duration:   5 * time.Second,
			Warmup:     time.Second,
			Seed:       1,
			Schedulers: []string{"mlfq", "fifo", "direct"},
		},
		timeSlice: time.Millisecond,
		rowCache:  32 << 20,
	}, cfg)
}

func TestConfig_Flags(t *testing.T) {
	cfg, w, err := parse(t, "scan",
		"--dir", "/tmp/store", "--keys", "2000", "--value-size", "32",
		"--duration", "200ms", "--warmup", "0s", "--workers", "3",
		"--clients", "2", "--scan-len", "10", "--schedulers", "fifo, mlfq,priority,",
		"--seed", "42", "--json", "out.json", "--plot", "out.SVG", "-q",
		"--max-tasks", "64", "--time-slice", "250us", "--row-cache", "0", "--sync", "--admin", ":7070", "--no-sweep", "--trim-wal")
	require.NoError(t, err)
	assert.Equal(t, "scan", w.Name())
	assert.Equal(t, &config{
		Config: bench.Config{
			Keys:       2000,
			ValueSize:  32,
			Duration:   200 * time.Millisecond,
			Warmup:     0,
			Seed:       42,
			Schedulers: []string{"fifo", "mlfq", "priority"},
			JSONPath:   "out.json",
			PlotPath:   "out.SVG",
			Quiet:      true,
		},
		dir:       "/tmp/store",
		workers:   3,
		maxTasks:  64,
		timeSlice: 250 * time.Microsecond,
		rowCache:  0,
		sync:      true,
		admin:     "127.0.0.1:7070",
		noSweep:   true,
		trimWAL:   true,
	}, cfg)
	assert.Equal(t, 3, cfg.resolvedWorkers())
}

// TestConfig_Subcommands: each workload is a subcommand, with the flags
// every workload has before or after its name, and the root's flags are
// noisy's.
func TestConfig_Subcommands(t *testing.T) {
	for _, name := range workloadNames() {
		cfg, w, err := parse(t, "--keys", "10", name, "--seed", "7")
		require.NoError(t, err, name)
		assert.Equal(t, name, w.Name())
		assert.Equal(t, int64(10), cfg.Keys)
		assert.Equal(t, uint64(7), cfg.Seed)
	}
	_, w, err := parse(t, "--scanners", "3", "--no-quiet")
	require.NoError(t, err)
	assert.Equal(t, "noisy", w.Name())
	assert.Equal(t, []string{"get", "scan", "multiget", "noisy", "cop-scan", "cop", "groups", "groups-steps", "soak", "txn", "runaway", "ttl"}, workloadNames())
}

func TestConfig_UsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the error
	}{
		{"--workload of YCSB's only", []string{"--workload", "ycsb-a"},
			[]string{`"ycsb-a": kvbench runs no YCSB workload; YCSB A–F run in the go-ycsb runner: cd cmd/kvbench/ycsb && go run . --workloads a,b,c,d,e,f (see its README.md)`}},
		{"unknown flag", []string{"--nope"}, []string{"unknown flag: --nope"}},
		{"another workload's flag", []string{"get", "--scanners", "2"}, []string{"unknown flag: --scanners"}},
		{"bad number", []string{"--keys", "many"}, []string{"--keys"}},
		{"bad duration", []string{"--duration", "5"}, []string{"--duration"}},
		{"argument", []string{"get", "noisy"}, []string{`unexpected argument "noisy" (kvbench get takes only flags)`}},
		{"unknown workload", []string{"group"},
			[]string{`unknown workload "group"`, "known: get, scan, multiget, noisy, cop-scan, cop, groups, groups-steps, soak"}},
		{"ycsb", []string{"ycsb-a"},
			[]string{`"ycsb-a": kvbench runs no YCSB workload; YCSB A–F run in the go-ycsb runner: cd cmd/kvbench/ycsb && go run . --workloads a,b,c,d,e,f`}},
		{"--workload", []string{"--workload", "groups", "--duration", "30s"},
			[]string{`--workload is gone: name the workload as a subcommand, one a run, as in "kvbench groups" (workloads: get, scan, multiget, noisy, cop-scan, cop, groups, groups-steps, soak, txn, runaway, ttl)`}},
		{"--workload ycsb", []string{"--workload", "ycsb-e,get"},
			[]string{`"ycsb-e": kvbench runs no YCSB workload`, "cd cmd/kvbench/ycsb && go run .", `--workload is gone: name the workload as a subcommand, one a run, as in "kvbench get"`}},
		{"multiget alone", []string{"multiget", "--clients", "1"},
			[]string{"multiget pairs its clients (a MultiGet and Gets of the same keys): --clients must be at least 2, not 1"}},
		{"no multiget keys", []string{"multiget", "--multiget-keys", "0"},
			[]string{"--multiget-keys must be at least 1, not 0"}},
		{"unknown scheduler", []string{"--schedulers", "mlfq,lifo"},
			[]string{`unknown scheduler "lifo"`, "known: mlfq, fifo, steal, direct, priority"}},
		{"no scheduler", []string{"--schedulers", ""}, []string{"--schedulers names no scheduler"}},
		{"repeated scheduler", []string{"--schedulers", "mlfq,mlfq"}, []string{"names a scheduler twice"}},
		{"plot format", []string{"--plot", "out.pdf"}, []string{"--plot out.pdf", ".png or .svg"}},
		{"admin without port", []string{"--admin", "7070"}, []string{`--admin "7070": want HOST:PORT or :PORT`}},
		{"admin bad port", []string{"--admin", "localhost:http"}, []string{`--admin "localhost:http": want HOST:PORT or :PORT: the port must be a number from 0 to 65535`}},
		{"admin port too big", []string{"--admin", ":70000"}, []string{"the port must be a number from 0 to 65535"}},
		{"negative max-tasks", []string{"--max-tasks", "-1"}, []string{"--max-tasks must not be negative, not -1"}},
		{"zero time-slice", []string{"--time-slice", "0s"}, []string{"--time-slice must be positive, not 0s"}},
		{"negative time-slice", []string{"--time-slice", "-1ms"}, []string{"--time-slice must be positive"}},
		{"bad time-slice", []string{"--time-slice", "1"}, []string{"--time-slice"}},
		{"negative row-cache", []string{"--row-cache", "-5"}, []string{"--row-cache must not be negative, not -5 (0 turns the row cache off)"}},
		{"bad row-cache", []string{"--row-cache", "64MiB"}, []string{"--row-cache"}},
		{"negative cache-size", []string{"--cache-size", "-5"}, []string{"--cache-size must not be negative, not -5 (0 = kv's default)"}},
		{"bad cache-size", []string{"--cache-size", "16MiB"}, []string{"--cache-size"}},
		{"negative disk-latency", []string{"get", "--disk-latency", "-200us"},
			[]string{"--disk-latency must not be negative, not -200µs (0 = no simulated latency)"}},
		{"bad disk-latency", []string{"--disk-latency", "200"}, []string{"--disk-latency"}},
		{"zero keys", []string{"--keys", "0"}, []string{"--keys must be at least 1"}},
		{"zero duration", []string{"--duration", "0s"}, []string{"--duration must be positive"}},
		{"negative warmup", []string{"--warmup", "-1s"}, []string{"--warmup must not be negative"}},
		{"negative workers", []string{"--workers", "-1"}, []string{"--workers must not be negative"}},
		{"zero clients", []string{"--clients", "0"}, []string{"--clients must be at least 1"}},
		{"zero clients of get", []string{"get", "--clients", "0"}, []string{"--clients must be at least 1"}},
		{"negative scanners", []string{"--scanners", "-2"}, []string{"--scanners must not be negative"}},
		{"zero scan-len", []string{"scan", "--scan-len", "0"}, []string{"--scan-len must be at least 1"}},
		{"zero long-scan-len", []string{"cop", "--long-scan-len", "0"}, []string{"--long-scan-len must be at least 1"}},
		{"zero value-size", []string{"--value-size", "0"}, []string{"--value-size must be at least 1"}},
		{"negative think", []string{"--think", "-1ms"}, []string{"--think must not be negative"}},
		{"negative soak think", []string{"soak", "--think", "-1ms"}, []string{"--think must not be negative"}},
		{"one account", []string{"txn", "--accounts", "1", "--hot", "2"}, []string{"--accounts must be between 2", "--hot must be a fraction between 0 and 1"}},
		{"unknown arrival", []string{"--arrival", "open"}, []string{`unknown --arrival "open" (known: fixed, think)`}},
		{"fixed arrival without think", []string{"--think", "0s"}, []string{"--think 0 with --arrival fixed", "--arrival think"}},
		{"zero oltp-rate", []string{"groups", "--oltp-rate", "0"}, []string{"--oltp-rate must be a positive number of Gets per second, not 0"}},
		{"negative oltp-rate", []string{"groups", "--oltp-rate", "-5"}, []string{"--oltp-rate must be a positive"}},
		{"NaN oltp-rate", []string{"groups", "--oltp-rate", "NaN"}, []string{"--oltp-rate must be a positive"}},
		{"infinite oltp-rate", []string{"groups", "--oltp-rate", "+Inf"}, []string{"--oltp-rate must be a positive"}},
		{"oltp-rate too high", []string{"groups", "--oltp-rate", "1e15"}, []string{"--oltp-rate 1e+15 gives each of", "between 1µs and 1h"}},
		{"oltp-rate too low", []string{"groups", "--oltp-rate", "1e-10"}, []string{"--oltp-rate 1e-10 gives each of", "between 1µs and 1h"}},
		{"bad oltp-rate", []string{"groups", "--oltp-rate", "fast"}, []string{"--oltp-rate"}},
		{"oltp-rate of groups-steps", []string{"groups-steps", "--oltp-rate", "5"}, []string{"unknown flag: --oltp-rate"}},
		{"zero group-scanners", []string{"groups-steps", "--group-scanners", "0"}, []string{"--group-scanners must be at least 1, not 0"}},
		{"every problem at once", []string{"get", "--keys", "0", "--clients", "0", "--schedulers", "bogus"},
			[]string{"--keys must be at least 1", "--clients must be at least 1", `unknown scheduler "bogus"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parse(t, tc.args...)
			require.Error(t, err)
			assert.Equal(t, 2, exitStatus(err), "a usage error exits with status 2")
			assert.NotContains(t, err.Error(), "\n", "the error is one line")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestConfig_WorkloadFlagOfYCSBOnly: --workload naming only YCSB
// workloads points to the go-ycsb runner, and suggests no subcommand.
func TestConfig_WorkloadFlagOfYCSBOnly(t *testing.T) {
	_, _, err := parse(t, "--workload", "ycsb-a,ycsb-b")
	require.Error(t, err)
	assert.Equal(t, 2, exitStatus(err))
	assert.Contains(t, err.Error(), `"ycsb-b": kvbench runs no YCSB workload`)
	assert.NotContains(t, err.Error(), "--workload is gone")
}

func TestConfig_Admin(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{":7070", "127.0.0.1:7070"},
		{"localhost:7070", "localhost:7070"},
		{"0.0.0.0:7070", "0.0.0.0:7070"},
		{"[::1]:0", "[::1]:0"},
	} {
		cfg, _, err := parse(t, "--admin", tc.arg)
		require.NoError(t, err, tc.arg)
		assert.Equal(t, tc.want, cfg.admin, tc.arg)
	}
}

// TestStoreOptions checks that the store's knobs reach kv.Options, with
// --row-cache 0 as kv's "off" and the load never synced.
func TestStoreOptions(t *testing.T) {
	cfg, _, err := parse(t, "--workers", "3", "--max-tasks", "64", "--time-slice", "250us", "--row-cache", "0", "--sync")
	require.NoError(t, err)
	st := &stores{cfg: cfg, log: io.Discard}
	opts := st.options("fifo", false)
	assert.Equal(t, kv.SchedulerFIFO, opts.Scheduler)
	assert.Equal(t, 3, opts.Workers)
	assert.Equal(t, 64, opts.MaxTasks)
	assert.Equal(t, 250*time.Microsecond, opts.TimeSlice)
	assert.Negative(t, opts.RowCacheSize, "kv turns the row cache off for a negative size")
	assert.False(t, opts.NoSync)

	cfg, _, err = parse(t)
	require.NoError(t, err)
	opts = (&stores{cfg: cfg, log: io.Discard}).options("", false)
	assert.Equal(t, int64(32<<20), opts.RowCacheSize)
	assert.Equal(t, time.Millisecond, opts.TimeSlice)
	assert.Zero(t, opts.MaxTasks, "kv's default")
	assert.True(t, opts.NoSync, "not synced by default")
}

// TestStoreOptions_SlowDisk: --cache-size and --disk-latency reach
// kv.Options — the block cache of every store, the load's included, and
// the simulated disk under the measured stores (on every scheduler,
// direct too) but not under the load's — and the report's StoreSetup.
func TestStoreOptions_SlowDisk(t *testing.T) {
	const latency = 5 * time.Millisecond
	cfg, _, err := parse(t, "get", "--cache-size", "16777216", "--disk-latency", "5ms", "--dir", t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, int64(16<<20), cfg.cacheSize)
	assert.Equal(t, latency, cfg.diskLatency)
	st := &stores{cfg: cfg, dir: cfg.dir, log: io.Discard}
	assert.Equal(t, bench.StoreSetup{DiskLatency: latency, CacheSize: 16 << 20}, st.StoreSetup())

	load := st.options("", true)
	assert.Equal(t, int64(16<<20), load.CacheSize)
	assert.Nil(t, load.FS, "the load runs on the real disk")
	for _, sched := range knownSchedulers {
		opts := st.options(sched, false)
		assert.Equal(t, int64(16<<20), opts.CacheSize, sched)
		require.NotNil(t, opts.FS, sched)
		assert.NotEqual(t, vfs.Default, opts.FS, "%s: wrapped", sched)
		assert.Equal(t, vfs.Default, vfs.Root(opts.FS), "%s: the OS filesystem, wrapped", sched)
	}
	// The wrapper is the slow one: a table read through it waits.
	fs := st.options("direct", false).FS
	name := filepath.Join(t.TempDir(), "000001.sst")
	require.NoError(t, os.WriteFile(name, []byte("table"), 0o644))
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	start := time.Now()
	_, err = f.ReadAt(make([]byte, 5), 0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), latency)

	// And the store opened for a run has the block cache asked for.
	db, err := st.Open("mlfq", false)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close(db)) }()
	require.IsType(t, &kv.DB{}, db)
	assert.Equal(t, int64(16<<20), db.(*kv.DB).Stats().Storage.BlockCacheCapacity)
	assert.Contains(t, st.Describe(), "a simulated disk latency of 5ms on every table read after the load")

	cfg, _, err = parse(t)
	require.NoError(t, err)
	opts := (&stores{cfg: cfg, log: io.Discard}).options("mlfq", false)
	assert.Zero(t, opts.CacheSize, "kv's default")
	assert.Nil(t, opts.FS, "kv's own filesystem")
}

// TestExitStatus: a usage error exits 2; the rest is cli.ExitStatus's
// rule (cmd/internal/cli tests it), an interrupted run included.
func TestExitStatus(t *testing.T) {
	assert.Equal(t, 2, exitStatus(usageError{Err: errors.New("bad flag")}))
	assert.Equal(t, 1, exitStatus(io.ErrUnexpectedEOF))
	assert.Equal(t, 143, exitStatus(fmt.Errorf("%w by %w during mlfq get", bench.ErrInterrupted, cli.SignalError{Sig: syscall.SIGTERM})))
}

func TestRoot_Help(t *testing.T) {
	out, _, err := execute(t, "--help")
	require.NoError(t, err)
	for _, flag := range []string{"--dir", "--keys", "--value-size", "--duration", "--warmup", "--workers",
		"--clients", "--scanners", "--schedulers", "--seed", "--json", "--plot", "--admin", "-q",
		"--no-quiet", "--arrival", "priority", "--max-tasks", "--time-slice", "--row-cache", "--sync",
		"--cache-size", "--disk-latency"} {
		assert.Contains(t, out, flag)
	}
	for _, name := range workloadNames() {
		assert.Regexp(t, `(?m)^  `+name+` +\S`, out, "the workloads are listed")
	}
	assert.NotContains(t, out, "--workload", "hidden")
	assert.NotContains(t, out, "--oltp-rate", "groups' own")
	assert.Contains(t, out, "default off: writes are not synced, as in the YCSB comparison; a crash may lose the last writes")
	assert.Contains(t, out, "(default 1ms)")
	assert.Contains(t, out, "(default 33554432)")
	assert.Contains(t, out, "exits with status 130")
	assert.Contains(t, out, "cd cmd/kvbench/ycsb && go run .")
	assert.Contains(t, out, "simulate a slow disk (0 = off): every read of a table (.sst) blocks its thread for DURATION "+
		"with a nanosleep inside ReadAt", "--disk-latency says it simulates a disk, and how")
	assert.Contains(t, out, "the page cache still answers the read")
	assert.Contains(t, out, "The load runs without it")
	assert.True(t, strings.HasPrefix(out, "kvbench loads"), out)
}

// TestSubcommand_Help: a workload's help has its own flags and every
// workload's, and no other workload's.
func TestSubcommand_Help(t *testing.T) {
	out, _, err := execute(t, "groups", "--help")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "groups measures resource control"), out)
	for _, flag := range []string{"--oltp-rate", "--group-scanners", "--scan-len", "--clients", "--duration", "--schedulers", "--admin"} {
		assert.Contains(t, out, flag)
	}
	assert.NotContains(t, out, "--scanners ")
	assert.NotContains(t, out, "--no-quiet")
}

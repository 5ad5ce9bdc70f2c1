package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parse runs the command's flag handling on args without running a
// benchmark and returns the config the run would have had.
func parse(t *testing.T, args ...string) (*config, error) {
	t.Helper()
	var got *config
	cmd := newCommand(func(_ context.Context, cfg *config, _, _ io.Writer) error {
		got = cfg
		return nil
	})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs(args)
	return got, cmd.Execute()
}

func TestConfig_Defaults(t *testing.T) {
	cfg, err := parse(t)
	require.NoError(t, err)
	assert.Equal(t, &config{
		keys:          200_000,
		valueSize:     100,
		duration:      5 * time.Second,
		warmup:        time.Second,
		clients:       4,
		scanners:      8,
		scanLen:       1_000,
		multiGetKeys:  100,
		longScanLen:   100_000,
		think:         200 * time.Microsecond,
		arrival:       "fixed",
		oltpRate:      2_000,
		groupScanners: 64,
		timeSlice:     time.Millisecond,
		rowCache:      32 << 20,
		workloads:     []string{"noisy"},
		schedulers:    []string{"mlfq", "fifo", "direct"},
		seed:          1,
	}, cfg)
}

func TestConfig_Flags(t *testing.T) {
	cfg, err := parse(t,
		"--dir", "/tmp/store", "--keys", "2000", "--value-size", "32",
		"--duration", "200ms", "--warmup", "0s", "--workers", "3",
		"--clients", "2", "--scanners", "5", "--scan-len", "10", "--long-scan-len", "300", "--multiget-keys", "7",
		"--think", "1ms", "--arrival", "think", "--oltp-rate", "500", "--group-scanners", "3",
		"--workload", "get, scan,multiget,groups", "--schedulers", "fifo,mlfq,priority",
		"--seed", "42", "--json", "out.json", "--plot", "out.SVG", "-q",
		"--max-tasks", "64", "--time-slice", "250us", "--row-cache", "0", "--sync", "--admin", ":7070", "--no-quiet")
	require.NoError(t, err)
	assert.Equal(t, &config{
		dir:           "/tmp/store",
		keys:          2000,
		valueSize:     32,
		duration:      200 * time.Millisecond,
		warmup:        0,
		workers:       3,
		maxTasks:      64,
		timeSlice:     250 * time.Microsecond,
		rowCache:      0,
		sync:          true,
		clients:       2,
		scanners:      5,
		scanLen:       10,
		multiGetKeys:  7,
		longScanLen:   300,
		think:         time.Millisecond,
		arrival:       "think",
		noQuiet:       true,
		oltpRate:      500,
		groupScanners: 3,
		workloads:     []string{"get", "scan", "multiget", "groups"},
		schedulers:    []string{"fifo", "mlfq", "priority"},
		seed:          42,
		jsonPath:      "out.json",
		plotPath:      "out.SVG",
		admin:         "127.0.0.1:7070",
		quiet:         true,
	}, cfg)
	assert.Equal(t, 3, cfg.resolvedWorkers())
}

func TestConfig_WorkloadFlagRepeated(t *testing.T) {
	cfg, err := parse(t, "--workload", "get", "--workload", "scan,multiget")
	require.NoError(t, err)
	assert.Equal(t, []string{"get", "scan", "multiget"}, cfg.workloads)
}

func TestConfig_UsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the error
	}{
		{"unknown flag", []string{"--nope"}, []string{"unknown flag: --nope"}},
		{"bad number", []string{"--keys", "many"}, []string{"--keys"}},
		{"bad duration", []string{"--duration", "5"}, []string{"--duration"}},
		{"argument", []string{"noisy"}, []string{`unexpected argument "noisy"`}},
		{"unknown workload", []string{"--workload", "get,group"},
			[]string{`unknown workload "group"`, "known: get, scan, multiget, noisy, cop-scan, cop, groups, groups-steps, soak"}},
		{"ycsb", []string{"--workload", "get,ycsb-a"},
			[]string{`"ycsb-a": kvbench runs no YCSB workload; YCSB A–F run in the go-ycsb runner: cd cmd/kvbench/ycsb && go run . --workloads a,b,c,d,e,f`}},
		{"no workload", []string{"--workload", ""}, []string{"names no workload"}},
		{"multiget alone", []string{"--workload", "multiget", "--clients", "1"},
			[]string{"--clients must be at least 2, not 1"}},
		{"no multiget keys", []string{"--workload", "multiget", "--multiget-keys", "0"},
			[]string{"--multiget-keys must be at least 1, not 0"}},
		{"unknown scheduler", []string{"--schedulers", "mlfq,lifo"},
			[]string{`unknown scheduler "lifo"`, "known: mlfq, fifo, steal, direct, priority"}},
		{"repeated scheduler", []string{"--schedulers", "mlfq,mlfq"}, []string{"names a scheduler twice"}},
		{"repeated workload", []string{"--workload", "get,get"}, []string{"names a workload twice"}},
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
		{"zero keys", []string{"--keys", "0"}, []string{"--keys must be at least 1"}},
		{"zero duration", []string{"--duration", "0s"}, []string{"--duration must be positive"}},
		{"negative warmup", []string{"--warmup", "-1s"}, []string{"--warmup must not be negative"}},
		{"negative workers", []string{"--workers", "-1"}, []string{"--workers must not be negative"}},
		{"zero clients", []string{"--clients", "0"}, []string{"--clients must be at least 1"}},
		{"negative scanners", []string{"--scanners", "-2"}, []string{"--scanners must not be negative"}},
		{"zero scan-len", []string{"--scan-len", "0"}, []string{"--scan-len must be at least 1"}},
		{"zero long-scan-len", []string{"--long-scan-len", "0"}, []string{"--long-scan-len must be at least 1"}},
		{"zero value-size", []string{"--value-size", "0"}, []string{"--value-size must be at least 1"}},
		{"negative think", []string{"--think", "-1ms"}, []string{"--think must not be negative"}},
		{"unknown arrival", []string{"--arrival", "open"}, []string{`unknown --arrival "open" (known: fixed, think)`}},
		{"fixed arrival without think", []string{"--think", "0s"}, []string{"--think 0 with --arrival fixed", "--arrival think"}},
		{"zero oltp-rate", []string{"--oltp-rate", "0"}, []string{"--oltp-rate must be a positive number of Gets per second, not 0"}},
		{"negative oltp-rate", []string{"--oltp-rate", "-5"}, []string{"--oltp-rate must be a positive"}},
		{"NaN oltp-rate", []string{"--oltp-rate", "NaN"}, []string{"--oltp-rate must be a positive"}},
		{"infinite oltp-rate", []string{"--oltp-rate", "+Inf"}, []string{"--oltp-rate must be a positive"}},
		{"oltp-rate too high", []string{"--oltp-rate", "1e15"}, []string{"--oltp-rate 1e+15 gives each of", "between 1µs and 1h"}},
		{"oltp-rate too low", []string{"--oltp-rate", "1e-10"}, []string{"--oltp-rate 1e-10 gives each of", "between 1µs and 1h"}},
		{"bad oltp-rate", []string{"--oltp-rate", "fast"}, []string{"--oltp-rate"}},
		{"zero group-scanners", []string{"--group-scanners", "0"}, []string{"--group-scanners must be at least 1, not 0"}},
		{"every problem at once", []string{"--keys", "0", "--clients", "0", "--workload", "bogus"},
			[]string{"--keys must be at least 1", "--clients must be at least 1", `unknown workload "bogus"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.args...)
			require.Error(t, err)
			assert.Equal(t, 2, exitStatus(err), "a usage error exits with status 2")
			assert.NotContains(t, err.Error(), "\n", "the error is one line")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestConfig_Admin(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{":7070", "127.0.0.1:7070"},
		{"localhost:7070", "localhost:7070"},
		{"0.0.0.0:7070", "0.0.0.0:7070"},
		{"[::1]:0", "[::1]:0"},
	} {
		cfg, err := parse(t, "--admin", tc.arg)
		require.NoError(t, err, tc.arg)
		assert.Equal(t, tc.want, cfg.admin, tc.arg)
	}
}

// TestStoreOptions checks that the store's knobs reach kv.Options, with
// --row-cache 0 as kv's "off" and the load never synced.
func TestStoreOptions(t *testing.T) {
	cfg, err := parse(t, "--workers", "3", "--max-tasks", "64", "--time-slice", "250us", "--row-cache", "0", "--sync")
	require.NoError(t, err)
	st := &stores{cfg: cfg, log: io.Discard}
	opts := st.options("fifo")
	assert.Equal(t, kv.SchedulerFIFO, opts.Scheduler)
	assert.Equal(t, 3, opts.Workers)
	assert.Equal(t, 64, opts.MaxTasks)
	assert.Equal(t, 250*time.Microsecond, opts.TimeSlice)
	assert.Negative(t, opts.RowCacheSize, "kv turns the row cache off for a negative size")
	assert.False(t, opts.NoSync)

	cfg, err = parse(t)
	require.NoError(t, err)
	opts = (&stores{cfg: cfg, log: io.Discard}).options("")
	assert.Equal(t, int64(32<<20), opts.RowCacheSize)
	assert.Equal(t, time.Millisecond, opts.TimeSlice)
	assert.Zero(t, opts.MaxTasks, "kv's default")
	assert.True(t, opts.NoSync, "not synced by default")
}

// TestExitStatus: a usage error exits 2; the rest is cli.ExitStatus's
// rule (cmd/internal/cli tests it), an interrupted run included.
func TestExitStatus(t *testing.T) {
	assert.Equal(t, 2, exitStatus(usageError{errors.New("bad flag")}))
	assert.Equal(t, 1, exitStatus(io.ErrUnexpectedEOF))
	assert.Equal(t, 143, exitStatus(fmt.Errorf("%w by %w during mlfq get", errInterrupted, cli.SignalError{Sig: syscall.SIGTERM})))
}

func TestRoot_Help(t *testing.T) {
	out, _, err := execute(t, "--help")
	require.NoError(t, err)
	for _, flag := range []string{"--dir", "--keys", "--value-size", "--duration", "--warmup", "--workers",
		"--clients", "--scanners", "--schedulers", "--seed", "--json", "--plot", "--admin", "-q", "--workload",
		"--oltp-rate", "--group-scanners", "groups-steps", "priority",
		"--max-tasks", "--time-slice", "--row-cache", "--sync"} {
		assert.Contains(t, out, flag)
	}
	assert.Contains(t, out, "default off: writes are not synced, as in the YCSB comparison; a crash may lose the last writes")
	assert.Contains(t, out, "(default 1ms)")
	assert.Contains(t, out, "(default 33554432)")
	assert.Contains(t, out, "exits with status 130")
	assert.True(t, strings.HasPrefix(out, "kvbench loads"), out)
}

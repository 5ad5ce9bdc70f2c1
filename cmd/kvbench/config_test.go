package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// parse runs the command's flag handling on args without running a
// benchmark and returns the config the run would have had.
func parse(t *testing.T, args ...string) (*config, error) {
	t.Helper()
	var got *config
	cmd := newCommand(func(_ context.Context, cfg *config, _ io.Writer) error {
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
		longScanLen:   100_000,
		think:         200 * time.Microsecond,
		oltpRate:      2_000,
		groupScanners: 64,
		workloads:     []string{"noisy"},
		schedulers:    []string{"mlfq", "fifo", "direct"},
		seed:          1,
	}, cfg)
}

func TestConfig_Flags(t *testing.T) {
	cfg, err := parse(t,
		"--dir", "/tmp/store", "--keys", "2000", "--value-size", "32",
		"--duration", "200ms", "--warmup", "0s", "--workers", "3",
		"--clients", "2", "--scanners", "5", "--scan-len", "10", "--long-scan-len", "300",
		"--think", "1ms", "--oltp-rate", "500", "--group-scanners", "3",
		"--workload", "get, scan,ycsb-e,groups", "--schedulers", "fifo,mlfq,priority",
		"--seed", "42", "--json", "out.json", "--plot", "out.SVG", "-q")
	require.NoError(t, err)
	assert.Equal(t, &config{
		dir:           "/tmp/store",
		keys:          2000,
		valueSize:     32,
		duration:      200 * time.Millisecond,
		warmup:        0,
		workers:       3,
		clients:       2,
		scanners:      5,
		scanLen:       10,
		longScanLen:   300,
		think:         time.Millisecond,
		oltpRate:      500,
		groupScanners: 3,
		workloads:     []string{"get", "scan", "ycsb-e", "groups"},
		schedulers:    []string{"fifo", "mlfq", "priority"},
		seed:          42,
		jsonPath:      "out.json",
		plotPath:      "out.SVG",
		quiet:         true,
	}, cfg)
	assert.Equal(t, 3, cfg.resolvedWorkers())
}

func TestConfig_WorkloadFlagRepeated(t *testing.T) {
	cfg, err := parse(t, "--workload", "get", "--workload", "ycsb-a,ycsb-b")
	require.NoError(t, err)
	assert.Equal(t, []string{"get", "ycsb-a", "ycsb-b"}, cfg.workloads)
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
			[]string{`unknown workload "group"`, "known: get, scan, noisy, cop-scan, cop, ycsb-a, ycsb-b, ycsb-c, ycsb-d, ycsb-e, ycsb-f, groups, groups-steps"}},
		{"no workload", []string{"--workload", ""}, []string{"names no workload"}},
		{"unknown scheduler", []string{"--schedulers", "mlfq,lifo"},
			[]string{`unknown scheduler "lifo"`, "known: mlfq, fifo, direct, priority"}},
		{"repeated scheduler", []string{"--schedulers", "mlfq,mlfq"}, []string{"names a scheduler twice"}},
		{"repeated workload", []string{"--workload", "get,get"}, []string{"names a workload twice"}},
		{"plot format", []string{"--plot", "out.pdf"}, []string{"--plot out.pdf", ".png or .svg"}},
		{"admin", []string{"--admin", "localhost:8080"}, []string{"--admin is not available yet (it arrives with kvctl)"}},
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
		{"zero oltp-rate", []string{"--oltp-rate", "0"}, []string{"--oltp-rate must be a positive number of Gets per second, not 0"}},
		{"negative oltp-rate", []string{"--oltp-rate", "-5"}, []string{"--oltp-rate must be a positive"}},
		{"NaN oltp-rate", []string{"--oltp-rate", "NaN"}, []string{"--oltp-rate must be a positive"}},
		{"infinite oltp-rate", []string{"--oltp-rate", "+Inf"}, []string{"--oltp-rate must be a positive"}},
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

func TestExitStatus_RunFailure(t *testing.T) {
	assert.Equal(t, 1, exitStatus(io.ErrUnexpectedEOF))
}

func TestRoot_Help(t *testing.T) {
	out, err := execute(t, "--help")
	require.NoError(t, err)
	for _, flag := range []string{"--dir", "--keys", "--value-size", "--duration", "--warmup", "--workers",
		"--clients", "--scanners", "--schedulers", "--seed", "--json", "--plot", "--admin", "-q", "--workload",
		"--oltp-rate", "--group-scanners", "groups-steps", "priority"} {
		assert.Contains(t, out, flag)
	}
	assert.True(t, strings.HasPrefix(out, "kvbench loads"), out)
}

package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/bench"
)

// usageError and exitStatus are the engine's: a usage error exits with
// status 2.
type usageError = bench.UsageError

func exitStatus(err error) int { return bench.ExitStatus(err) }

// runFunc runs workload w with cfg: runBench, or a test's.
type runFunc func(ctx context.Context, cfg *config, w bench.Workload, out, errOut io.Writer) error

// newRootCmd builds the kvbench command and its subcommands, one per
// workload, with their flags bound to a config of their own.
func newRootCmd() *cobra.Command { return newCommand(runBench) }

// newCommand is newRootCmd with the run itself given, so that tests can
// check what the flags become without running a benchmark.
//
// run writes the results (the tables and the lines under them) to out and
// everything else (progress, notes, the store's log) to errOut, so that
// `kvbench > results.txt` keeps only the results.
func newCommand(run runFunc) *cobra.Command {
	cfg := &config{}
	return bench.NewRoot(bench.Root{
		Use:   "kvbench",
		Short: "Benchmark coopkv's read pool: workloads side by side on each scheduler",
		Long: `kvbench loads a coopkv store (in a temporary directory unless --dir is
given), then runs a workload on each scheduler, reopening the store for
each scheduler and warming up before measuring, and prints one table of
throughput and latency percentiles per scheduler and operation class.

Each workload is a subcommand with flags of its own ("kvbench noisy
--help" lists them, and under "Global Flags" those every workload has,
which the list below holds too). With no
subcommand kvbench runs "noisy", and takes noisy's flags: --scanners
goroutines looping on long scans while --clients goroutines do point Gets
at a steady rate, on mlfq, fifo and direct, to show what the read pool
buys short reads. --schedulers steal adds YATP's single-level
work-stealing queue, FIFO order with batches taken into workers' local
queues; priority is resource control, every read in the default group
(the groups workloads always run on it, and only on it).

YCSB A–F are not kvbench's: the go-ycsb runner, a module of its own in
cmd/kvbench/ycsb, runs them against coopkv and its peers
(cd cmd/kvbench/ycsb && go run . --markdown).

` + tailHelp,
		Example: `  kvbench
  kvbench get --schedulers mlfq,direct --duration 10s
  kvbench --arrival think --think 1ms   # noisy's Gets each 1 ms after the last returned
  kvbench noisy --schedulers mlfq,fifo --no-quiet   # noisy without its quiet phase
  kvbench scan --json results.json --plot latency.svg
  kvbench cop --keys 1000000 --long-scan-len 1000000
  kvbench groups --json groups.json
  kvbench txn --accounts 16 --clients 16   # transfers in transactions: commits, conflicts, and no money lost
  kvbench get --sync --row-cache 0 > results.txt
  kvbench get --keys 300000 --value-size 1000 --row-cache 0 --cache-size 16777216 --disk-latency 200us --clients 32   # a simulated slow disk
  kvbench --workers 4 --max-tasks 1000 --time-slice 500us
  kvbench --json - -q | jq '.results[] | {scheduler, class, p99_us}'
  kvbench --duration 1m --admin :7070   # meanwhile: curl 127.0.0.1:7070/stats, or kvctl --addr 127.0.0.1:7070`,
		Flags: cfg.addFlags,
		Start: func(c *cobra.Command, w bench.Workload) error { return start(c, cfg, w, run) },
		Unknown: func(arg string) error {
			if strings.HasPrefix(arg, "ycsb") {
				return ycsbMoved(arg)
			}
			return nil
		},
	})
}

// start checks cfg and w's flags, every problem at once, and runs w.
func start(c *cobra.Command, cfg *config, w bench.Workload, run runFunc) error {
	if err := cfg.validate(w); err != nil {
		return usageError{Err: err}
	}
	return run(c.Context(), cfg, w, c.OutOrStdout(), c.ErrOrStderr())
}

// tailHelp is the root's help on the store, the output, Ctrl-C and
// --admin.
const tailHelp = `The store: --workers, --max-tasks and --time-slice size the read pool
(beside --workers, one spare worker steps point reads while every worker
is busy; workers hand their P back to Go every quarter slice or 100 µs),
--row-cache the cache in front of Get (0 turns it off). Pebble's block
cache takes kv's default unless --cache-size: a quarter of the memory the
process may use (its cgroup limit, else the machine's), within 64 MiB and
8 GiB, which holds kvbench's keys; tables keep a one-level index. Writes
are not synced unless --sync, as in the YCSB comparison: a crash may lose
the last writes, and kvbench's store is regenerated anyway.

A slow disk, simulated: --disk-latency 200us puts the store, after the
load, on a filesystem where every read of a table blocks its thread for
200 µs (a nanosleep inside ReadAt, as a pread waiting for the device
blocks; the page cache still answers the read): a fixed latency per read,
with no queue and no bandwidth limit. Give --cache-size below the data's
size so that reads miss the block cache, and --row-cache 0. The figures
are then a simulated disk's, and the report says so (a "store:" line
above the table; simulated_disk_latency_us in the JSON).

Output: the results (the tables and the lines under them) go to stdout,
progress to stderr, so "kvbench > results.txt" keeps only the results.
"--json -" writes the JSON report to stdout instead, and the table to
stderr.

Ctrl-C (SIGINT) or SIGTERM stops the run: the phase running ends there,
kvbench prints what it measured — the phases done, and the stopped phase's
figures so far, marked "(interrupted)" — writes --json and --plot if asked,
and exits with status 130 (143 for SIGTERM). A second Ctrl-C ends it at
once, without results.

--admin ADDR serves the store's admin endpoint over HTTP while kvbench
runs, for kvctl --addr or Prometheus: /stats, /metrics, /groups. kvbench
reopens the store for each scheduler; between two stores the endpoint
answers 503. ADDR without a host (":7070") listens on 127.0.0.1 only;
give "0.0.0.0:7070" for every interface (the endpoint has no
authentication, and PUT /groups changes the scheduling).`

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

// usageError is a mistake in how kvbench was called: a bad flag, an
// unknown workload or scheduler. kvbench exits with status 2 for it and 1
// for any other failure.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitStatus is the process exit status for err, the error of a run: 2
// for a usage error, else cli.ExitStatus's (128 + the signal for an
// interrupted run, 1 for any other failure).
func exitStatus(err error) int {
	if errors.As(err, new(usageError)) {
		return 2
	}
	return cli.ExitStatus(err)
}

// newRootCmd builds the kvbench command, with its flags bound to a config
// of its own.
func newRootCmd() *cobra.Command { return newCommand(runBench) }

// newCommand is newRootCmd with the run itself given, so that tests can
// check what the flags become without running a benchmark.
//
// run writes the results (the tables and the lines under them) to out and
// everything else (progress, notes, the store's log) to errOut, so that
// `kvbench > results.txt` keeps only the results.
func newCommand(run func(ctx context.Context, cfg *config, out, errOut io.Writer) error) *cobra.Command {
	cfg := &config{}
	cmd := &cobra.Command{
		Use:   "kvbench",
		Short: "Benchmark coopkv's read pool: workloads side by side on each scheduler",
		Long: `kvbench loads a coopkv store (in a temporary directory unless --dir is
given), then runs each workload on each scheduler, reopening the store for
each scheduler and warming up before measuring, and prints one table of
throughput and latency percentiles per scheduler and operation class.

With no arguments it runs "noisy": --scanners goroutines looping on long
scans while --clients goroutines do point Gets at a steady rate, on mlfq,
fifo and direct, to show what the read pool buys short reads. On each
scheduler, after the warm-up, a quiet phase first runs the same Gets alone,
without the scans, for --duration (its rows are workload "noisy-quiet");
then the measured phase runs them beside the scans. Under the table
kvbench prints, per scheduler, the Gets' e2e p99 quiet and beside the
scans and their ratio (want ≤ 3×), the share of the offered rate achieved
beside the scans (want ≥ 98%), and, when fifo and mlfq both ran, fifo's
e2e p99 over mlfq's (want ≥ 10×). --no-quiet skips the quiet phase.
--schedulers steal adds YATP's single-level work-stealing queue, FIFO
order with batches taken into workers' local queues.

--arrival says when noisy's (and cop's) Gets are due. "fixed", the
default: each Get client keeps a schedule of its own, its Get i due at
i × --think after a random phase in [0, --think) (from --seed, so that the
clients do not fire together); it sleeps until a Get is due, issues a late
one at once and skips none, so the clients offer --clients / --think Gets
per second however slow the store is. "think": a client's next Get is due
--think after its previous one returned, so a slow store is asked for
fewer Gets and its latency looks better than a steady load would find it
("coordinated omission"). Either way a Get's latency counts from when it
was due, not from when the client got to issue it: under fixed arrival a
store that falls behind its schedule shows it in the latency (and keeps
falling behind for the rest of the phase). Each such Get class has two
rows in the table: "get e2e", from when each Get was due to its return,
with offered/s (the Gets per second asked for) and achieved (the Gets
completed per second, as a share of offered/s); and "get service", from
each Get's call to its return. In the JSON the e2e figures are p50_us ...
max_us, beside arrival, offered_per_sec, achieved_pct and service_p50_us
... service_max_us. groups' oltp Gets are always on a fixed schedule, at
--oltp-rate.

"multiget" compares a MultiGet of --multiget-keys random keys (class
"multiget", the even clients) with the same keys read by as many Gets
one after another (class "gets", the odd clients: clients 2i and 2i+1
draw the same keys); each class's ops/s counts sets of keys read. It
needs --clients 2 or more.

"cop" puts the coprocessor in the scans' place: its store's values are
msgpack rows ({"region", "amount", "ts", and a random pad out to
--value-size}), and --scanners goroutines loop on aggregate requests over
--long-scan-len keys (count and sum of amount where amount >= 5000, by
region) beside noisy's Gets. Its baseline "cop-scan" — the same Gets beside
plain scans of as many rows — runs just before it on each scheduler, and a
line under the table compares the Gets' p99 beside each. A run with cop or
cop-scan loads rows for all its workloads; other runs load random values.

"groups" measures resource control: four resource groups share the pool —
oltp (high priority, 500 RU/s, burstable) doing point Gets at --oltp-rate,
batch-a (3,000 RU/s) and batch-b (1,000 RU/s), both burstable, and capped
(200 RU/s, not burstable), each with --group-scanners goroutines looping on
scans of --scan-len keys. oltp first runs alone (group "oltp-alone"), then
beside the others. Under the table kvbench prints each group's RU/s and
share of the total, batch-a : batch-b against 3 : 1, capped against its
200 RU/s, and oltp's Get p99 alone and beside the others. "groups-steps" runs scans
of 1,024 keys and of 100 keys in two groups of equal shares, which should
get equal RU.

The groups workloads always run once, with resource control, on the
priority scheduler, whatever --schedulers says; --schedulers applies to
the other workloads (on priority, every read is in the default group).

The store: --workers, --max-tasks and --time-slice size the read pool
(beside --workers, one spare worker steps point reads while every worker
is busy; workers hand their P back to Go every quarter slice or 100 µs),
--row-cache the cache in front of Get (0 turns it off). Pebble's block
cache takes kv's default: a quarter of the memory the process may use
(its cgroup limit, else the machine's), within 64 MiB and 8 GiB, which
holds kvbench's keys; tables keep a one-level index. Writes are not
synced unless --sync, as in the YCSB comparison: a crash may lose the last
writes, and kvbench's store is regenerated anyway.

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
authentication, and PUT /groups changes the scheduling).`,
		Example: `  kvbench
  kvbench --workload get,scan --schedulers mlfq,direct --duration 10s
  kvbench --arrival think --think 1ms   # noisy's Gets each 1 ms after the last returned
  kvbench --schedulers mlfq,fifo --no-quiet   # noisy without its quiet phase
  kvbench --workload get,scan --json results.json --plot latency.svg
  kvbench --workload cop --keys 1000000 --long-scan-len 1000000
  kvbench --workload groups,groups-steps --json groups.json
  kvbench --workload get --sync --row-cache 0 > results.txt
  kvbench --workers 4 --max-tasks 1000 --time-slice 500us
  kvbench --json - -q | jq '.results[] | {scheduler, class, p99_us}'
  kvbench --duration 1m --admin :7070   # meanwhile: curl 127.0.0.1:7070/stats, or kvctl --addr 127.0.0.1:7070`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unexpected argument %q (kvbench takes only flags)", args[0])}
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.validate(); err != nil {
				return usageError{err}
			}
			return run(cmd.Context(), cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cfg.addFlags(cmd.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return cmd
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// usageError is a mistake in how kvbench was called: a bad flag, an
// unknown workload or scheduler. kvbench exits with status 2 for it and 1
// for any other failure.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitStatus is the process exit status for err, the error of a run.
func exitStatus(err error) int {
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}

// newRootCmd builds the kvbench command, with its flags bound to a config
// of its own.
func newRootCmd() *cobra.Command { return newCommand(runBench) }

// newCommand is newRootCmd with the run itself given, so that tests can
// check what the flags become without running a benchmark.
func newCommand(run func(ctx context.Context, cfg *config, out io.Writer) error) *cobra.Command {
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
fifo and direct, to show what the read pool buys short reads.

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
the other workloads (on priority, every read is in the default group).`,
		Example: `  kvbench
  kvbench --workload get,scan --schedulers mlfq,direct --duration 10s
  kvbench --workload ycsb-a,ycsb-e --json results.json --plot latency.svg
  kvbench --workload cop --keys 1000000 --long-scan-len 1000000
  kvbench --workload groups,groups-steps --json groups.json`,
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
			return run(cmd.Context(), cfg, cmd.OutOrStdout())
		},
	}
	cfg.addFlags(cmd.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	return cmd
}

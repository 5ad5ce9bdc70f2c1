package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/bench"
)

// exitStatus is the engine's: 2 for a usage error (a bad flag, an
// unknown workload, no cluster), as kvbench's.
func exitStatus(err error) int { return bench.ExitStatus(err) }

// newCommand builds the command and its subcommands, one per workload.
// Running one checks the flags, then calls run — runTiKV, or a test's
// that runs nothing — which writes the results to out and everything
// else (progress, notes, the store's log) to errOut.
func newCommand(run func(ctx context.Context, cfg *config, w bench.Workload, out, errOut io.Writer) error) *cobra.Command {
	cfg := &config{}
	start := func(c *cobra.Command, w bench.Workload) error {
		if err := cfg.validate(w); err != nil {
			return bench.UsageError{Err: err}
		}
		return run(c.Context(), cfg, w, c.OutOrStdout(), c.ErrOrStderr())
	}
	return bench.NewRoot(bench.Root{
		Use:   "kvbench-tikv",
		Short: "Run kvbench's workloads on coopkv's store on a TiKV cluster",
		Long: `kvbench-tikv runs kvbench's workloads on coopkv's kv.Store on a TiKV
cluster (package kv/tikv), whose PD servers --pd names: it loads --keys
keys under --prefix, then runs the workload's phases — a warm-up, then
the measured phase — and prints one table of throughput and latency
percentiles per operation class, as kvbench does, with --json and --plot.

A remote store has no read scheduler to compare: the rows are the
cluster's, labelled "tikv" where kvbench names its schedulers. Gets,
MultiGets and scans are scheduled by TiKV's read pool; coprocessor
requests run in a coopkv read pool in this process (--workers,
--max-tasks, --time-slice), over region-by-region snapshot scans.
txn's transfers are client-go's optimistic transactions (two-phase
commit, every key read checked at the commit), through kv/tikv's Txn.
groups and groups-steps do not run here: they read each resource group's
RU from the embedded store's own resource manager.

--mock runs on client-go's in-process mock cluster, split into a few
regions, instead: no TiKV needed, and its figures measure the client and
the mock, not TiKV; its rows are labelled "tikv-mock".

The store runs no GC unless --gc: on a cluster shared with TiDB, GC is
TiDB's. The keys stay in the cluster after the run (the load rewrites
the same keys next time); give another --prefix to keep runs apart.

Each workload is a subcommand with flags of its own ("kvbench-tikv noisy
--help"); with no subcommand it runs "noisy", and takes noisy's flags.
Ctrl-C stops the run and prints what was measured, as kvbench does.`,
		Example: `  kvbench-tikv --pd 127.0.0.1:2379 noisy --duration 30s
  kvbench-tikv --pd 10.0.0.1:2379,10.0.0.2:2379 get --keys 1000000 --json get.json
  kvbench-tikv --mock --keys 20000 --duration 5s scan`,
		Flags: cfg.addFlags,
		Start: start,
	})
}

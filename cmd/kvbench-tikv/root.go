package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/kvbench/bench"
)

// defaultWorkload is what runs when no workload is named, as in kvbench.
const defaultWorkload = "noisy"

// usage marks a mistake in how the command was called (a bad flag, an
// unknown workload, no cluster): exitStatus is 2 for it, as kvbench's.
type usage struct{ error }

// exitStatus is the process exit status for err: 2 for a usage error,
// else bench.ExitStatus's (0, 1, or 128 + the signal of an interrupted
// run).
func exitStatus(err error) int {
	if errors.As(err, new(usage)) {
		return 2
	}
	return bench.ExitStatus(err)
}

// newCommand builds the command and its subcommands, one per workload.
// Running one checks the flags, then calls run — runTiKV, or a test's
// that runs nothing — which writes the results to out and everything
// else (progress, notes, the store's log) to errOut.
func newCommand(run func(ctx context.Context, cfg *config, w bench.Workload, out, errOut io.Writer) error) *cobra.Command {
	cfg := &config{}
	workloads := bench.Workloads()
	def := workloads[slices.IndexFunc(workloads, func(w bench.Workload) bool { return w.Name() == defaultWorkload })]
	start := func(c *cobra.Command, w bench.Workload) error {
		if err := cfg.validate(w); err != nil {
			return usage{err}
		}
		return run(c.Context(), cfg, w, c.OutOrStdout(), c.ErrOrStderr())
	}
	asUsage := func(err error) error { return usage{err} }
	cmd := &cobra.Command{
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
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			var names []string
			for _, w := range workloads {
				names = append(names, w.Name())
			}
			return usage{fmt.Errorf("unknown workload %q (known: %s)", args[0], strings.Join(names, ", "))}
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(c *cobra.Command, _ []string) error { return start(c, def) },
	}
	cfg.addFlags(cmd.PersistentFlags())
	def.Flags(cmd.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage{err} })
	for _, w := range workloads {
		cmd.AddCommand(bench.Command(w, start, asUsage))
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

// Command kvbench runs a workload on an embedded coopkv store, once per
// read scheduler, and reports throughput and latency percentiles per
// operation class side by side: as a table, and optionally as JSON
// (--json) and a plot (--plot). Each workload is a subcommand with flags
// of its own; with none it runs "noisy", which shows what the read pool
// buys: point Gets that stay fast while long scans run. The engine and
// the workloads are package bench; this command opens the stores (a
// *kv.DB per scheduler) and serves --admin.
//
// Usage:
//
//	kvbench [workload] [flags]
//
// Run kvbench --help for the workloads and the flags.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	root := newRootCmd()
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(root.ErrOrStderr(), "kvbench: %v\n", err)
		os.Exit(exitStatus(err))
	}
}

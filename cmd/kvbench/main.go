// Command kvbench runs workloads on an embedded coopkv store, once per read
// scheduler, and reports throughput and latency percentiles per operation
// class side by side: as a table, and optionally as JSON (--json) and a
// plot (--plot). Its default, the "noisy" workload, shows what the read
// pool buys: point Gets that stay fast while long scans run.
//
// Usage:
//
//	kvbench [flags]
//
// Run kvbench --help for the flags.
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

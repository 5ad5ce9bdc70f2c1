// Command kvbench-tikv runs kvbench's workloads on coopkv's kv.Store on a
// TiKV cluster (package tikv): the same workloads, flags, table, JSON and
// plot as kvbench (package bench is their engine), on one store, whose
// rows the report labels "tikv", instead of one embedded store per read
// scheduler. --pd names the cluster's PD servers; --mock runs on
// client-go's in-process mock cluster instead, split into regions, for a
// machine without TiKV (its figures measure the client and the mock, not
// TiKV).
//
// Usage:
//
//	kvbench-tikv (--pd HOST:PORT,… | --mock) [workload] [flags]
//
// Run kvbench-tikv --help for the workloads and the flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

func main() { os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }

// execute runs the command with args, in a context that SIGINT and
// SIGTERM cancel (a run so stopped prints what it measured), and returns
// the exit status, as kvbench's: 0, 1 for a failure, 2 for a usage error,
// 128 + the signal for an interrupted run. An error is printed to stderr.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, stop := cli.SignalContext(ctx)
	defer stop()
	cmd := newCommand(runTiKV)
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.Name(), err)
	}
	return exitStatus(err)
}

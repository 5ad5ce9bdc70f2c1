// Command kvctl is the operator's tool for a coopkv store.
//
// Live commands talk to a running store through its admin endpoint
// (kv/admin's Handler, which "kvbench --admin ADDR" serves): pool and
// groups show the read pool's and the resource groups' figures, top
// refreshes them every second with rates, and groups set / groups delete
// configure resource groups.
//
// Offline commands open a store directory themselves, so the store must
// not be open in another process: get, scan, stats, cop and check open it
// read-only and change none of its files; set and delete open it for
// writing.
//
// Usage:
//
//	kvctl COMMAND [flags]
//
// Run kvctl --help for the commands, kvctl COMMAND --help for their flags.
// kvctl exits with status 1 for any failure, and 130 when Ctrl-C ends it
// (the normal way to leave top) or 143 when SIGTERM does.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

func main() {
	ctx, stop := cli.SignalContext(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes kvctl with args and returns its exit status, printing a
// failure to stderr as "kvctl: ...". It is main without the process
// around it, so that tests see the status and the messages the user sees.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, cli.ErrInterrupted):
		// Ctrl-C is how top (or a long check) is left: nothing went wrong.
		return cli.ExitStatus(err)
	}
	fmt.Fprintf(root.ErrOrStderr(), "kvctl: %v\n", err)
	return 1
}

// Command ycsb runs the YCSB core workloads A–F with go-ycsb v1.0.3 against
// coopkv and its peers — today's badger v4, etcd's bbolt and raw Pebble v2,
// and go-ycsb's own badger v1.5.4 and bolt v1.3.1 — each store in a process
// of its own by default (--isolate), and reports each store's throughput
// and per-operation latency percentiles: as a plain table, as markdown
// (--markdown) and as JSON (--json).
//
// coopkv is driven through the binding in package coopkvdb (each record
// one msgpack map); badger v4, bbolt and Pebble through packages
// badger4db, bboltdb and pebbledb (the same records, the same bytes);
// badger v1.5.4 and bolt through go-ycsb's own bindings. No store fsyncs
// its writes. The command lives in a module of its own so that coopkv's
// module never depends on go-ycsb, badger or bolt.
//
// Usage:
//
//	cd cmd/kvbench/ycsb && go run . --markdown --json /tmp/ycsb.json
//
// With --reopen (the restart mode) each store is closed and opened again
// on its directory before each workload, and --timeline, which --reopen
// turns on, records each phase's operations per second.
//
// Run it with --help for the flags; README.md says what it measures.
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
	// go-ycsb prints notes to os.Stdout as it goes ("Using request
	// distribution …"). Results go to the real stdout through
	// root.OutOrStdout(); everything else, go-ycsb's chatter included, to
	// stderr, so that `ycsb > results.txt` keeps only the results.
	root.SetOut(os.Stdout)
	root.SetErr(os.Stderr)
	os.Stdout = os.Stderr
	err := root.ExecuteContext(ctx)
	stop()
	if err != nil {
		// An interrupted run exits as kvbench and kvctl do: 130 for
		// SIGINT, 143 for SIGTERM.
		err = cli.Interrupted(ctx, err)
		fmt.Fprintf(root.ErrOrStderr(), "ycsb: %v\n", err)
		os.Exit(cli.ExitStatus(err))
	}
}

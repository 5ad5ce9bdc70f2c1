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
// kvctl exits with status 1 for any failure and 130 when Ctrl-C ends it
// (the normal way to leave top).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// errInterrupted is the cause of the context that Ctrl-C (SIGINT) or
// SIGTERM cancels.
var errInterrupted = errors.New("interrupted")

// exitInterrupted is the status after an interrupt: 128 + SIGINT, as
// shells report a process that SIGINT ended.
const exitInterrupted = 128 + int(syscall.SIGINT)

func main() {
	ctx, stop := signalContext(context.Background())
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
	case err == errInterrupted:
		// top ends this way when asked to: nothing went wrong.
		return exitInterrupted
	}
	fmt.Fprintf(root.ErrOrStderr(), "kvctl: %v\n", err)
	if errors.Is(err, errInterrupted) {
		return exitInterrupted
	}
	return 1
}

// signalContext returns a context that SIGINT or SIGTERM cancels with
// errInterrupted as its cause, and stop, which releases the signals and
// must be called. After the first signal the signals get their default
// action back, so that a second Ctrl-C ends at once a command slow to stop
// (a check of a large store).
func signalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-sigs:
			signal.Stop(sigs)
			cancel(errInterrupted)
		case <-done:
		}
	})
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// interrupted returns errInterrupted when ctx was cancelled by a signal,
// else err: a command that fails because Ctrl-C cancelled its read says
// so, rather than "context canceled".
func interrupted(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errInterrupted) {
		return errInterrupted
	}
	return err
}

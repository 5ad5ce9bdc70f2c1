package bench

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

// Command returns the subcommand that runs w: named after it, with its
// help and its own flags, bound to it, and no arguments. When called it
// runs run(c, w); usage wraps the errors in how it was called (an
// argument, a flag it could not parse), so that the binary can give them
// an exit status of their own. kvbench and kv/tikv's kvbench-tikv build
// their workload subcommands with it, so a workload reads the same on
// both.
func Command(w Workload, run func(c *cobra.Command, w Workload) error, usage func(error) error) *cobra.Command {
	sub := &cobra.Command{
		Use:   w.Name() + " [flags]",
		Short: w.Short(),
		Long:  w.Long(),
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usage(fmt.Errorf("unexpected argument %q (%s %s takes only flags)", args[0], c.Root().Name(), w.Name()))
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(c *cobra.Command, _ []string) error { return run(c, w) },
	}
	w.Flags(sub.Flags())
	sub.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	return sub
}

// What a binary outside cmd/ (kv/tikv's kvbench-tikv, in a module of its
// own) needs of cmd/internal/cli, which only cmd/ may import, to behave
// as kvbench does on signals, exit statuses and its stderr.

// SignalContext is cli.SignalContext: a context that SIGINT or SIGTERM
// cancels with the signal as its cause, so that an interrupted Run's
// error names it, and stop, which must be called.
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	return cli.SignalContext(parent)
}

// ExitStatus is cli.ExitStatus: 0 for nil, 128 + the signal for an
// interrupted run (ErrInterrupted), 1 for any other failure.
func ExitStatus(err error) int { return cli.ExitStatus(err) }

// SyncWriter is cli.SyncWriter: a writer that serialises its writes, for
// a run's stderr, which gets progress lines and a store's log from
// several goroutines.
type SyncWriter = cli.SyncWriter

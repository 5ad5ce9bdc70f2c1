package bench

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

// Command returns the subcommand that runs w: named after it, with its
// help and its own flags, bound to it, and no arguments. When called it
// runs run(c, w); usage wraps the errors in how it was called (an
// argument, a flag it could not parse), so that the binary can give them
// an exit status of their own. kvbench and kvbench-tikv build
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

// UsageError marks a mistake in how a benchmark was called: a bad flag, an
// unknown workload or scheduler. ExitStatus is 2 for it.
//
// Err is usually every problem with the flags at once, joined
// (errors.Join), whose message has a line per problem; a UsageError's
// message puts them on one line, separated by "; ", the line a binary
// prints after its name. The problems themselves stay reachable with
// errors.Is and errors.As.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return strings.ReplaceAll(e.Err.Error(), "\n", "; ") }
func (e UsageError) Unwrap() error { return e.Err }

// ExitStatus is a benchmark binary's exit status for the error of its
// run: 2 for a UsageError, else cli.ExitStatus's (0 for nil, 128 + the
// signal for an interrupted run, 1 for any other failure).
func ExitStatus(err error) int {
	if errors.As(err, new(UsageError)) {
		return 2
	}
	return cli.ExitStatus(err)
}

// DefaultWorkload is what a benchmark runs when no workload is named.
const DefaultWorkload = "noisy"

// Root is what a benchmark binary's root command says and does; NewRoot
// builds it. kvbench and kvbench-tikv are two of them.
type Root struct {
	Use, Short, Long, Example string
	// Flags adds the flags every workload takes (the store's, the
	// output's) to the root's persistent flags.
	Flags func(*pflag.FlagSet)
	// Start checks the flags for w, returning a UsageError for bad ones,
	// and runs it.
	Start func(c *cobra.Command, w Workload) error
	// Unknown, when not nil, may word the error for an argument that names
	// no workload; nil from it keeps the default words.
	Unknown func(arg string) error
}

// NewRoot builds the root command r describes: one subcommand per
// workload (Command), and the root itself runs DefaultWorkload with its
// flags. An unknown workload or a flag that does not parse is a
// UsageError.
func NewRoot(r Root) *cobra.Command {
	workloads := Workloads()
	var names []string
	var def Workload
	for _, w := range workloads {
		names = append(names, w.Name())
		if w.Name() == DefaultWorkload {
			def = w
		}
	}
	asUsage := func(err error) error { return UsageError{err} }
	cmd := &cobra.Command{
		Use:     r.Use,
		Short:   r.Short,
		Long:    r.Long,
		Example: r.Example,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if r.Unknown != nil {
				if err := r.Unknown(args[0]); err != nil {
					return UsageError{err}
				}
			}
			return UsageError{fmt.Errorf("unknown workload %q (known: %s)", args[0], strings.Join(names, ", "))}
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(c *cobra.Command, _ []string) error { return r.Start(c, def) },
	}
	r.Flags(cmd.PersistentFlags())
	def.Flags(cmd.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{err} })
	for _, w := range workloads {
		cmd.AddCommand(Command(w, r.Start, asUsage))
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

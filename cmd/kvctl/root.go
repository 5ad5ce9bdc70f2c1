package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

// output is what every command prints with, bound per root command (no
// globals: a test builds as many roots as it likes).
type output struct {
	hex bool // keys and values print as hex; KEY and VALUE arguments are hex
	// print prints the command's results in the form --json chose (one
	// JSON document, or JSON lines for scan, cop and top), so that no
	// command asks the flag itself. The root sets it before any command
	// runs.
	print *cli.Printer
}

// Command groups, for the help's layout.
const (
	groupLive    = "live"
	groupOffline = "offline"
)

// newRootCmd builds kvctl's command tree writing to stdout and stderr.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	out := &output{}
	var asJSON bool
	root := &cobra.Command{
		Use:   "kvctl",
		Short: "Inspect and operate a coopkv store",
		Long: `kvctl inspects and operates a coopkv store.

Live commands talk to a running store through its admin endpoint
(--addr, default 127.0.0.1:7070): a program mounts admin.Handler(db) from
package kv/admin, or "kvbench --admin 127.0.0.1:7070" serves one.

Offline commands open a store directory (--dir) themselves. The store must
not be open in another process: Pebble allows one opener at a time, and
kvctl says so at once rather than wait. get, scan, stats, cop and check
open it read-only and leave its files as they were.

Keys and values print as text when they are printable UTF-8, else as hex
("0x…"); text that itself starts with "0x" prints as hex too, so "0x"
always means hex. --hex prints everything as hex, and makes KEY and VALUE
arguments (and --start, --end) hex.

--json prints one JSON document (JSON lines for scan, cop and top) for
scripts. Failures go to stderr; the exit status is 1 for any failure, 130
when Ctrl-C ends a command (the way to leave top).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			out.print = cli.NewPrinter(cmd.OutOrStdout(), cmd.ErrOrStderr(), asJSON)
		},
	}
	root.SetOut(stdout)
	// Pebble logs from its own goroutines while a command prints: one lock
	// keeps their lines whole.
	root.SetErr(&cli.SyncWriter{W: stderr})
	root.CompletionOptions.HiddenDefaultCmd = true
	root.PersistentFlags().BoolVar(&asJSON, "json", false, "print JSON (one document; JSON lines for scan, cop and top)")
	root.PersistentFlags().BoolVar(&out.hex, "hex", false, "print keys and values as hex, and read KEY, VALUE, --start and --end as hex")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see %s --help)", err, c.CommandPath())
	})
	root.AddGroup(
		&cobra.Group{ID: groupLive, Title: "Live commands (a running store's admin endpoint, --addr):"},
		&cobra.Group{ID: groupOffline, Title: "Offline commands (a store directory, --dir):"},
	)
	for _, c := range []*cobra.Command{newPoolCmd(out), newGroupsCmd(out), newTopCmd(out)} {
		c.GroupID = groupLive
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{
		newGetCmd(out), newSetCmd(out), newDeleteCmd(out), newScanCmd(out), newCheckpointCmd(out),
		newStatsCmd(out), newCopCmd(out), newCheckCmd(out),
	} {
		c.GroupID = groupOffline
		root.AddCommand(c)
	}
	return root
}

// exactArgs accepts exactly len(names) arguments and otherwise says which
// ones a command wants, by name.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		want := "no arguments"
		if len(names) > 0 {
			want = strings.Join(names, " ")
		}
		return fmt.Errorf("%s wants %s, got %d argument(s) (see %s --help)", cmd.CommandPath(), want, len(args), cmd.CommandPath())
	}
}

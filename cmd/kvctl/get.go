package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
)

// pair is a key and its value as kvctl prints them with --json.
type pair struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// gotValue is get's result: the pair for scripts, the value alone for
// people (who typed the key).
type gotValue pair

func (g gotValue) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, g.Value)
	return err
}

// newGetCmd builds "kvctl get".
func newGetCmd(out *output) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "get KEY --dir DIR",
		Short: "Print the value of a key",
		Long: `get prints the value stored under KEY, opening the store read-only. A
missing key is an error (exit status 1).

KEY is taken byte for byte, or as hex with --hex ("0x" in front optional).
The value prints as text when it is printable UTF-8, else as hex.`,
		Example: `  kvctl get user:42 --dir /var/lib/app/store
  kvctl get --hex 0x00ff --dir store --json`,
		Args: exactArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			key, err := parseKey(args[0], out.hex)
			if err != nil {
				return err
			}
			db, err := sf.open(readOnly, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeStore(db, &err)
			ctx := cmd.Context()
			v, err := db.Get(ctx, key)
			if errors.Is(err, kv.ErrNotFound) {
				return fmt.Errorf("key %s: %w", strconv.Quote(formatBytes(key, out.hex)), err)
			}
			if err != nil {
				return cli.Interrupted(ctx, err)
			}
			return out.print.Print(gotValue{Key: formatBytes(key, out.hex), Value: formatBytes(v, out.hex)})
		},
	}
	sf.add(cmd)
	return cmd
}

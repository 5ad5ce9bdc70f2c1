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

// deleted is what kvctl delete prints with --json.
type deleted struct {
	Key string `json:"key"`
	// Existed says whether the key was in the store: deleting a missing
	// key is not an error, but an operator who mistyped it wants to know.
	Existed bool `json:"existed"`
}

// WriteText prints nothing: a missing key is a note on stderr, and the
// rest is no news.
func (deleted) WriteText(io.Writer) error { return nil }

// newDeleteCmd builds "kvctl delete".
func newDeleteCmd(out *output) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "delete KEY --dir DIR",
		Short: "Delete a key",
		Long: `delete removes KEY, synced to disk before kvctl exits. Deleting a missing
key is not an error, but kvctl notes it on stderr (--json: "existed":
false). KEY is taken byte for byte, or as hex with --hex.`,
		Example: `  kvctl delete user:42 --dir store
  kvctl delete --hex 0x00ff --dir store --json`,
		Args: exactArgs("KEY"),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			key, err := parseKey(args[0], out.hex)
			if err != nil {
				return err
			}
			db, err := sf.open(readWrite, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeStore(db, &err)
			ctx := cmd.Context()
			_, err = db.Get(ctx, key)
			existed := err == nil
			if err != nil && !errors.Is(err, kv.ErrNotFound) {
				return cli.Interrupted(ctx, err)
			}
			if err := db.Delete(key); err != nil {
				return err
			}
			d := deleted{Key: formatBytes(key, out.hex), Existed: existed}
			if !existed {
				out.print.Note(func() string { return fmt.Sprintf("kvctl: note: key %s was not in the store", strconv.Quote(d.Key)) })
			}
			return out.print.Print(d)
		},
	}
	sf.add(cmd)
	return cmd
}

package main

import (
	"io"

	"github.com/spf13/cobra"
)

// setPair is set's result: the pair written for scripts, nothing for
// people (no news is good news, as with cp).
type setPair pair

func (setPair) WriteText(io.Writer) error { return nil }

// newSetCmd builds "kvctl set".
func newSetCmd(out *output) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "set KEY VALUE --dir DIR",
		Short: "Store a value under a key",
		Long: `set stores VALUE under KEY, synced to disk before kvctl exits. It opens
the store for writing; a directory that does not exist or is empty gets a
new store (kvctl says so on stderr).

KEY and VALUE are taken byte for byte, or as hex with --hex. It prints
nothing, or with --json the pair written.`,
		Example: `  kvctl set user:42 '{"name":"ada"}' --dir store
  kvctl set --hex 0x00ff 0xdeadbeef --dir store`,
		Args: exactArgs("KEY", "VALUE"),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			key, err := parseKey(args[0], out.hex)
			if err != nil {
				return err
			}
			value, err := parseBytes(args[1], out.hex)
			if err != nil {
				return err
			}
			db, err := sf.open(create, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeStore(db, &err)
			if err := db.Set(key, value); err != nil {
				return err
			}
			return out.print.Print(setPair{Key: formatBytes(key, out.hex), Value: formatBytes(value, out.hex)})
		},
	}
	sf.add(cmd)
	return cmd
}

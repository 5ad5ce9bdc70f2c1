package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// checkpointed is what kvctl checkpoint prints with --json.
type checkpointed struct {
	Dir string `json:"dir"`
	To  string `json:"to"`
}

func (c checkpointed) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "checkpoint of %s written to %s\n", c.Dir, c.To)
	return err
}

// newCheckpointCmd builds "kvctl checkpoint".
func newCheckpointCmd(out *output) *cobra.Command {
	var sf storeFlags
	var to string
	cmd := &cobra.Command{
		Use:   "checkpoint --dir DIR --to OUT",
		Short: "Copy a store that no process has open into a new directory",
		Long: `checkpoint writes a consistent copy of the store in --dir into --to, which
must not exist; the copy opens like any store. Table files are hard-linked
where --to is on the store's filesystem (no space until the store compacts
them away), copied otherwise. The store is opened read-write, as Pebble
checkpoints only such an open (it copies the OPTIONS file the open
writes), and its data are left as they were. For a store that a process
has open, that process calls kv.DB.Checkpoint.`,
		Example: `  kvctl checkpoint --dir store --to backup/2026-12-03`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if to == "" {
				return errors.New("--to is empty")
			}
			db, err := sf.open(readWrite, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeStore(db, &err)
			if err := db.Checkpoint(to); err != nil {
				return err
			}
			return out.print.Print(checkpointed{Dir: sf.dir, To: to})
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&to, "to", "", "the directory to write the copy into (required; must not exist)")
	_ = cmd.MarkFlagRequired("to") // the flag exists
	return cmd
}

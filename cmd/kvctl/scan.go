package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
)

// scannedPair is a pair of a scan: a line of the key and the value
// separated by a tab for people (formatBytes never gives a tab).
type scannedPair pair

func (p scannedPair) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s\t%s\n", p.Key, p.Value)
	return err
}

// scannedKey is a key of a scan with --keys-only.
type scannedKey struct {
	Key string `json:"key"`
}

func (k scannedKey) WriteText(w io.Writer) error {
	_, err := fmt.Fprintln(w, k.Key)
	return err
}

// newScanCmd builds "kvctl scan" over the store's own forward and
// reverse scans.
func newScanCmd(out *output) *cobra.Command {
	var (
		sf                 storeFlags
		start, end, prefix string
		opts               kv.ScanOptions
	)
	cmd := &cobra.Command{
		Use:   "scan --dir DIR [--start K] [--end K | --prefix P] [--limit N] [--reverse]",
		Short: "Print the pairs of a key range",
		Long: `scan prints the keys in [--start, --end) and their values, one pair a
line, separated by a tab (text never holds a tab: a key or value that does
prints as hex); with --json one {"key", "value"} object a line. It opens
the store read-only.

An empty or missing --start is the first key, --end past the last.
--prefix P is the range of every key that starts with P (kv.PrefixEnd),
instead of --start and --end. --reverse walks the range in descending key order (the store scans
backwards itself); with --limit N it prints the N greatest keys of the
range.`,
		Example: `  kvctl scan --dir store --start user: --end user; --limit 10
  kvctl scan --dir store --prefix user: --limit 10      # the same keys
  kvctl scan --dir store --reverse --limit 1          # the last key
  kvctl scan --dir store --keys-only --json | jq -r .key`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if opts.Limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (no limit) or more", opts.Limit)
			}
			lo, err := parseBound(start, out.hex)
			if err != nil {
				return fmt.Errorf("--start: %w", err)
			}
			hi, err := parseBound(end, out.hex)
			if err != nil {
				return fmt.Errorf("--end: %w", err)
			}
			if cmd.Flags().Changed("prefix") {
				if cmd.Flags().Changed("start") || cmd.Flags().Changed("end") {
					return errors.New("--prefix names the whole range: give it without --start and --end")
				}
				if lo, err = parseBound(prefix, out.hex); err != nil {
					return fmt.Errorf("--prefix: %w", err)
				}
				hi = kv.PrefixEnd(lo)
			}
			db, err := sf.open(readOnly, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeStore(db, &err)
			ctx := cmd.Context()
			it := db.Scan(ctx, lo, hi, &opts)
			defer it.Close()
			p := out.print
			// One of each, reused: a pair boxed as a cli.Result each time
			// would be an allocation a row.
			var kp scannedPair
			var ko scannedKey
			for k, v := range it.All() {
				if opts.KeysOnly {
					ko = scannedKey{Key: formatBytes(k, out.hex)}
					err = p.Item(&ko)
				} else {
					kp = scannedPair{Key: formatBytes(k, out.hex), Value: formatBytes(v, out.hex)}
					err = p.Item(&kp)
				}
				if err != nil {
					return err
				}
			}
			if err := it.Err(); err != nil {
				// What was printed stands: it is the range up to the error.
				_ = p.Flush()
				return cli.Interrupted(ctx, err)
			}
			return p.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&start, "start", "", "the first key of the range (inclusive); empty = the store's first")
	cmd.Flags().StringVar(&end, "end", "", "the end of the range (exclusive); empty = past the store's last")
	cmd.Flags().StringVar(&prefix, "prefix", "", "every key that starts with this (instead of --start and --end); empty = every key")
	cmd.Flags().IntVar(&opts.Limit, "limit", 0, "print at most this many pairs; 0 = no limit")
	cmd.Flags().BoolVar(&opts.Reverse, "reverse", false, "descending key order, from the end of the range")
	cmd.Flags().BoolVar(&opts.KeysOnly, "keys-only", false, "print the keys only (values are not read)")
	return cmd
}

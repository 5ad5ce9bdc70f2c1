package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
)

// storeStats is what kvctl stats prints with --json. It is the storage
// part of DB.Stats: the pool and row-cache figures of kvctl's own brief
// open say nothing about the store (kvctl pool shows a running one's),
// and its block-cache figures are that open's too.
type storeStats struct {
	Dir     string          `json:"dir"`
	Storage kv.StorageStats `json:"storage"`
}

// newStatsCmd builds "kvctl stats".
func newStatsCmd(out *output) *cobra.Command {
	var sf storeFlags
	cmd := &cobra.Command{
		Use:   "stats --dir DIR",
		Short: "Show the store's storage: levels, tables, sizes",
		Long: `stats opens the store read-only and shows its storage (DB.Stats): the
tables and bytes of each LSM level, its size on disk and the memtable's
(the writes in the WAL not yet flushed to a table, replayed at open).

For the read pool and the resource groups of a running store, see
"kvctl pool" and "kvctl groups".`,
		Example: `  kvctl stats --dir store
  kvctl stats --dir store --json | jq .storage.disk_bytes`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			db, err := sf.open(readOnly, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeStore(db, &err)
			return out.print.Print(&storeStats{Dir: sf.dir, Storage: db.Stats().Storage})
		},
	}
	sf.add(cmd)
	return cmd
}

// WriteText prints the storage figures, a row per LSM level.
func (st *storeStats) WriteText(w io.Writer) error {
	s := &st.Storage
	t := cli.NewTable(w)
	t.Printf("store\t%s\n", st.Dir)
	t.Printf("on disk\t%s\n", size(int64(s.DiskBytes)))
	t.Printf("memtable\t%s\n", size(int64(s.MemtableBytes)))
	t.Println()
	t.Println("LEVEL\tTABLES\tSIZE")
	var tables, bytes int64
	for _, l := range s.Levels {
		t.Printf("L%d\t%d\t%s\n", l.Level, l.Tables, size(l.Bytes))
		tables += l.Tables
		bytes += l.Bytes
	}
	t.Printf("total\t%d\t%s\n", tables, size(bytes))
	return t.Flush()
}

// size renders a byte count in binary units to three significant digits.
func size(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	i := -1
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	digits := 2
	switch {
	case f >= 100:
		digits = 0
	case f >= 10:
		digits = 1
	}
	return fmt.Sprintf("%.*f %ciB", digits, f, units[i])
}

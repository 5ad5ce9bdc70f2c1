package kv

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// CheckReport says what Check looked at.
type CheckReport struct {
	// Points and Tombstones are the entries CheckLevels walked.
	Points     int64 `json:"points"`
	Tombstones int   `json:"tombstones"`
	// Tables is the number of table files whose every block's checksum
	// was verified.
	Tables int `json:"tables"`
}

// Check verifies the store with Pebble's own checks: CheckLevels walks every
// entry of every level and memtable (the LSM ordering invariants, each data
// block's checksum as it is read), then every table file's blocks —
// index, filter and metadata included — are verified against their
// checksums. It returns the first problem found, naming the table where
// Pebble does. Check reads only; on a store opened ReadOnly it changes no
// file. It is slow (it reads the whole store) and runs on the caller's
// goroutine, not in the read pool.
func (db *DB) Check(ctx context.Context) (CheckReport, error) {
	var rep CheckReport
	if err := db.enter(); err != nil {
		return rep, err
	}
	defer db.mu.RUnlock()

	var st pebble.CheckLevelsStats
	if err := db.pdb.CheckLevels(&st); err != nil {
		return rep, fmt.Errorf("kv: check: levels: %w", corruptOr(err))
	}
	rep.Points, rep.Tombstones = st.NumPoints, st.NumTombstones
	if err := ctx.Err(); err != nil {
		return rep, err
	}

	levels, err := db.pdb.SSTables()
	if err != nil {
		return rep, fmt.Errorf("kv: check: listing tables: %w", err)
	}
	ro := db.popts.MakeReaderOptions()
	seen := map[uint64]bool{}
	for _, level := range levels {
		for _, t := range level {
			num := uint64(t.BackingSSTNum)
			if t.BackingType != pebble.BackingTypeLocal || seen[num] {
				continue
			}
			seen[num] = true
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			name := db.tablePath(t)
			switch err := db.checkTable(ctx, name, ro); {
			case errors.Is(err, os.ErrNotExist):
				// Compacted away since the listing (a live store): its
				// data lives on in the tables that replaced it.
			case err != nil:
				return rep, fmt.Errorf("kv: check: table %s: %w", name, corruptOr(err))
			default:
				rep.Tables++
			}
		}
	}
	return rep, nil
}

// tablePath is the file of t's backing table.
func (db *DB) tablePath(t pebble.SSTableInfo) string {
	return db.popts.FS.PathJoin(db.dir, fmt.Sprintf("%s.sst", t.BackingSSTNum))
}

// checkTableFiles is Pebble's consistency check at Open, made here so that
// its failures are ErrCorrupt: every table the MANIFEST lists is on disk,
// at the size the MANIFEST gives. A missing or truncated table would
// otherwise surface only when a read reaches it.
func (db *DB) checkTableFiles() error {
	levels, err := db.pdb.SSTables()
	if isNotExist(err) { // a table the MANIFEST lists is not on disk
		return &corruptError{err}
	}
	if err != nil {
		return err
	}
	for _, level := range levels {
		for _, t := range level {
			if t.BackingType != pebble.BackingTypeLocal || t.Virtual {
				continue // a virtual table's size is not its file's
			}
			name := db.tablePath(t)
			st, err := db.popts.FS.Stat(name)
			switch {
			case err != nil:
				return &corruptError{fmt.Errorf("table %s: %w", name, err)}
			case uint64(st.Size()) != t.Size:
				return &corruptError{fmt.Errorf("table %s is %d bytes, where the MANIFEST says %d", name, st.Size(), t.Size)}
			}
		}
	}
	return nil
}

func (db *DB) checkTable(ctx context.Context, name string, ro sstable.ReaderOptions) error {
	f, err := db.popts.FS.Open(name)
	if err != nil {
		return err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		_ = f.Close()
		return err
	}
	r, err := sstable.NewReader(ctx, readable, ro)
	if err != nil {
		_ = readable.Close()
		return err
	}
	return errors.Join(r.ValidateBlockChecksums(), r.Close())
}

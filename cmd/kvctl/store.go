package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/kv"
)

// storeFlags are the flags of the commands that open a store directory.
type storeFlags struct {
	dir string
}

// add puts --dir on cmd, required.
func (f *storeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dir, "dir", "", "the store's directory (required; the store must not be open in another process)")
	_ = cmd.MarkFlagRequired("dir") // the flag exists
}

// lockedError is an Open that found the store held by another opener.
// Its text says what to do; the kv error stays reachable (kv.ErrLocked).
type lockedError struct {
	dir string
	err error
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("store %s is open in another process (Pebble allows one opener at a time: stop it, or use the live commands against its admin endpoint)", e.dir)
}

func (e *lockedError) Unwrap() error { return e.err }

// openMode is how a command opens a store.
type openMode int

const (
	readOnly  openMode = iota // reads; the store's files are left as they were
	readWrite                 // writes to an existing store
	create                    // writes, creating the store if there is none
)

// open opens the store in f.dir. Its log goes to errOut, warnings and
// errors only (a corrupt table, a failed flush): the routine lines would
// bury a command's output. With create, a directory that is missing or
// empty gets a new store, and kvctl says so, as a mistyped --dir would
// want; readWrite refuses such a directory.
func (f *storeFlags) open(mode openMode, errOut io.Writer) (*kv.DB, error) {
	if f.dir == "" {
		return nil, errors.New("--dir is empty")
	}
	fresh := false
	if mode != readOnly {
		entries, err := os.ReadDir(f.dir)
		fresh = errors.Is(err, os.ErrNotExist) || err == nil && len(entries) == 0
		if fresh && mode == readWrite {
			return nil, fmt.Errorf("no store in %s", f.dir)
		}
	}
	db, err := kv.Open(f.dir, &kv.Options{
		ReadOnly: mode == readOnly,
		// One command's reads: a small pool, and no value cache (nothing
		// is read twice).
		Workers:      2,
		RowCacheSize: -1,
		Logger:       slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if errors.Is(err, kv.ErrLocked) {
		return nil, &lockedError{dir: f.dir, err: err}
	}
	if err != nil {
		return nil, err
	}
	if fresh {
		fmt.Fprintf(errOut, "kvctl: note: created a new store in %s\n", f.dir)
	}
	return db, nil
}

// closeStore closes db, keeping the command's own error first: a failed
// Close matters only when nothing else went wrong.
func closeStore(db *kv.DB, err *error) {
	if cerr := db.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}

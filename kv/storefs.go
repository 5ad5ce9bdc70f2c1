package kv

import (
	"io"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/kv/internal/diskfs"
)

// storeFS is the filesystem Pebble runs on: diskfs's, which decides what a
// failed write does to the store (see package diskfs), with the store's
// lock file (lock.go) and its table reads watched (diskreads.go).
type storeFS struct {
	*diskfs.FS
	// os says the FS is the operating system's: its locks are the
	// process's (see Lock).
	os bool
	// reads watches the table reads (diskreads.go).
	reads *diskReads
}

// Open opens a file for reading; a table's reads are watched.
func (fs *storeFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || fs.reads == nil || !diskfs.IsTable(name) {
		return f, err
	}
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	return &tableFile{File: f, reads: fs.reads, table: fs.reads.table(name, size)}, nil
}

// Lock takes the store's lock file. On the OS filesystem a second opener in
// this process gets errLockedHere before Pebble is asked: fcntl locks do not
// exclude the process that holds them, and Pebble's own refusal says so
// only in its text.
func (fs *storeFS) Lock(name string) (io.Closer, error) {
	if !fs.os {
		return fs.FS.Lock(name)
	}
	key, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	osLocks.Lock()
	defer osLocks.Unlock()
	if osLocks.held[key] {
		return nil, errLockedHere
	}
	c, err := fs.FS.Lock(name)
	if err != nil {
		return nil, err
	}
	if osLocks.held == nil {
		osLocks.held = map[string]bool{}
	}
	osLocks.held[key] = true
	return &osLock{Closer: c, key: key}, nil
}

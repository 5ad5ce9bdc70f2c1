package kv

import "github.com/coopkv/coopkv/kv/internal/diskfs"

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

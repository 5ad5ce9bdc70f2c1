package kv

import (
	"errors"
	"io"
	"path/filepath"
	"sync"
)

// The store's lock file: one opener at a time, also within this process.

// osLocks are the lock files this process holds through the OS
// filesystem, by absolute path.
var osLocks struct {
	sync.Mutex
	held map[string]bool
}

// errLockedHere is a lock this process holds already (another open DB in
// it); Open reports it as ErrLocked.
var errLockedHere = errors.New("another open store in this process holds its lock")

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

// osLock releases the process's hold on a lock file with it.
type osLock struct {
	io.Closer
	key  string
	once sync.Once
}

func (l *osLock) Close() error {
	err := l.Closer.Close()
	l.once.Do(func() {
		osLocks.Lock()
		delete(osLocks.held, l.key)
		osLocks.Unlock()
	})
	return err
}

package kv

import (
	"errors"
	"io"
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

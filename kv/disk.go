package kv

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// What the disk can do to writes, and what the store does about it.
//
// Pebble cannot recover from a failed write of its WAL or MANIFEST: it
// reports one through Logger.Fatalf and expects the call not to return, and
// a WAL write that fails while a commit is being prepared panics with the
// commit pipeline's lock held, after which every commit — and Pebble's
// Close — waits forever. An embedded library may do neither. So every store
// runs Pebble on a diskFS, which sees each write before Pebble does:
//
//   - A failed write or sync of the WAL, or of the MANIFEST, fails the
//     store (diskHealth.fail) before Pebble hears of it. From then on the
//     store's writes fail with ErrFailed, and the disk is frozen: nothing
//     more reaches the WAL (its writes and syncs are dropped and reported
//     done, so that Pebble's pipeline never breaks), and no file is created,
//     renamed, linked or removed (Pebble's background work fails instead,
//     so it cannot delete a WAL whose contents a torn MANIFEST no longer
//     accounts for). The directory then holds what it held at the failure:
//     every write acknowledged before it, and none after.
//   - A write that meets ENOSPC marks the disk full (new writes fail with
//     ErrDiskFull at once) and, on the WAL or MANIFEST, waits for space and
//     tries again, so that no committed batch is lost or torn; on a table
//     it is returned to Pebble after a pause, and Pebble retries the flush
//     or compaction (without the pause it would retry at once, in a loop).
//     The first write that succeeds again clears the mark; so does a
//     second without a new ENOSPC (fullHold), since a refused write
//     cannot succeed and Pebble may not retry a failed compaction until
//     a flush asks for one: the next write then finds out.
//
// A failed fsync is never retried: after one, the kernel may already have
// dropped the dirty pages (PostgreSQL's "fsyncgate"), so a retry that
// succeeded would claim what may not be on disk.

// diskHealth is the state the diskFS keeps for its store. Every transition
// is in this file: healthy → full ⇄ healthy, and either → failed, for good.
type diskHealth struct {
	failed   atomic.Pointer[error] // the first unrecoverable write error
	failedCh chan struct{}         // closed when failed is set
	// dirSyncErr is the first failed sync of a directory other than the
	// store's since the last takeDirSyncErr (see otherDir).
	dirSyncErr atomic.Pointer[error]
	// fullAt is when a write last met ENOSPC (UnixNano), 0 once a write
	// has succeeded since: the disk counts as full for fullHold after it.
	fullAt atomic.Int64
	// closed ends the waits for space, at Close.
	closed    chan struct{}
	closeOnce sync.Once
	log       *slog.Logger
	// fullPause is how long a table write that met ENOSPC waits before
	// Pebble hears of it, and the longest wait between tries on the WAL.
	fullPause time.Duration
}

// fullHold is how long the disk counts as full after a write met ENOSPC.
const fullHold = time.Second

func newDiskHealth(l *slog.Logger) *diskHealth {
	return &diskHealth{closed: make(chan struct{}), failedCh: make(chan struct{}), log: l, fullPause: 100 * time.Millisecond}
}

// err is why writes are refused now: ErrFailed wrapping the cause, or
// ErrDiskFull; nil when the disk takes writes.
func (h *diskHealth) err() error {
	if err := h.failedErr(); err != nil {
		return err
	}
	if h.isFull() {
		return fmt.Errorf("%w (%w)", ErrDiskFull, syscall.ENOSPC)
	}
	return nil
}

// failedErr is ErrFailed wrapping the failure's cause, or nil while the
// store has not failed.
func (h *diskHealth) failedErr() error {
	if c := h.cause(); c != nil {
		return fmt.Errorf("%w: %w", ErrFailed, c)
	}
	return nil
}

// cause is the failure's cause, or nil.
func (h *diskHealth) cause() error {
	if p := h.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// fail fails the store with err; the first failure is kept and logged.
func (h *diskHealth) fail(err error) {
	if h.failed.CompareAndSwap(nil, &err) {
		close(h.failedCh)
		h.log.Error("store failed: writes are refused until it is closed and reopened; reads go on", "error", err.Error())
	}
}

// takeDirSyncErr returns and forgets the failed sync otherDir kept.
func (h *diskHealth) takeDirSyncErr() error {
	if p := h.dirSyncErr.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// isFull reports whether a write met ENOSPC less than fullHold ago and none
// has succeeded since.
func (h *diskHealth) isFull() bool {
	at := h.fullAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < fullHold
}

// markFull notes a write that met ENOSPC.
func (h *diskHealth) markFull(err error) {
	if h.fullAt.Swap(time.Now().UnixNano()) == 0 {
		h.log.Warn("disk full: writes are refused until space returns; reads go on", "error", err.Error())
	}
}

// markWritten notes a write that reached the disk.
func (h *diskHealth) markWritten() {
	if h.fullAt.Load() != 0 && h.fullAt.Swap(0) != 0 {
		h.log.Info("disk space returned: writes are accepted again")
	}
}

// close ends the waits for space: a WAL or MANIFEST write still waiting
// then fails the store.
func (h *diskHealth) close() { h.closeOnce.Do(func() { close(h.closed) }) }

// waitForSpace sleeps before try n (from 0) of a write that met ENOSPC,
// and reports false once the store is closing.
func (h *diskHealth) waitForSpace(n int) bool {
	d := min(time.Millisecond<<min(n, 20), h.fullPause)
	select {
	case <-h.closed:
		return false
	case <-time.After(d):
		return true
	}
}

// pause holds a failed table write back before Pebble retries it.
func (h *diskHealth) pause() {
	select {
	case <-h.closed:
	case <-time.After(h.fullPause):
	}
}

// frozen is the error of a change to the directory after the failure.
func (h *diskHealth) frozen() error {
	if c := h.cause(); c != nil {
		return fmt.Errorf("%w: the disk is frozen since: %w", ErrFailed, c)
	}
	return nil
}

func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// fileKind sorts the files Pebble writes by what a failed write does.
type fileKind uint8

const (
	kindOther    fileKind = iota // tables, blob files, OPTIONS, markers: Pebble copes
	kindWAL                      // NNNNNN.log
	kindManifest                 // MANIFEST-NNNNNN
)

// kindOf is the kind of the file name; only the store's own directory has
// a WAL and a MANIFEST (a checkpoint's copy of them is a file like any).
func (fs *diskFS) kindOf(name string) fileKind {
	if filepath.Clean(fs.PathDir(name)) != fs.dir {
		return kindOther
	}
	base := fs.PathBase(name)
	switch {
	case strings.HasSuffix(base, ".log"):
		return kindWAL
	case strings.HasPrefix(base, "MANIFEST-"):
		return kindManifest
	}
	return kindOther
}

// diskFS is the filesystem Pebble runs on (see above).
type diskFS struct {
	vfs.FS
	h   *diskHealth
	dir string // the store's directory, cleaned
	// os says FS is the operating system's: its locks are the process's
	// (see Lock).
	os bool
	// reads watches the table reads (diskreads.go).
	reads *diskReads
}

func (fs *diskFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		fs.noteErr(fs.kindOf(name), err)
		return nil, err
	}
	return &diskFile{File: f, h: fs.h, kind: fs.kindOf(name)}, nil
}

// noteErr records what a failed change to the directory says of the disk.
func (fs *diskFS) noteErr(k fileKind, err error) {
	switch {
	case isNoSpace(err):
		fs.h.markFull(err)
		if k == kindOther {
			fs.h.pause()
		}
	case k != kindOther:
		fs.h.fail(err)
	}
}

func (fs *diskFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.create(name, c, func() (vfs.File, error) { return fs.FS.Create(name, c) })
}

// create opens a file for writing with open. A new WAL or MANIFEST waits
// for space, as their writes do; a WAL that cannot be created fails the
// store and is replaced by a void one, since Pebble panics when it cannot
// rotate its WAL.
func (fs *diskFS) create(name string, c vfs.DiskWriteCategory, open func() (vfs.File, error)) (vfs.File, error) {
	k := fs.kindOf(name)
	if err := fs.h.frozen(); err != nil {
		if k == kindWAL {
			return fs.void(name, c)
		}
		return nil, err
	}
	for n := 0; ; n++ {
		f, err := open()
		if err == nil {
			return &diskFile{File: f, h: fs.h, kind: k}, nil
		}
		if k == kindOther {
			fs.noteErr(k, err)
			return nil, err
		}
		if isNoSpace(err) {
			fs.h.markFull(err)
			if fs.h.waitForSpace(n) {
				continue
			}
		}
		fs.h.fail(err)
		if k == kindWAL {
			return fs.void(name, c)
		}
		return nil, err
	}
}

func (fs *diskFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := fs.h.frozen(); err != nil {
		return nil, err
	}
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f, err)
}

func (fs *diskFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.create(newname, c, func() (vfs.File, error) { return fs.FS.ReuseForWrite(oldname, newname, c) })
}

func (fs *diskFS) Link(oldname, newname string) error {
	if err := fs.h.frozen(); err != nil {
		return err
	}
	return fs.FS.Link(oldname, newname)
}

func (fs *diskFS) Remove(name string) error {
	if err := fs.h.frozen(); err != nil {
		return err
	}
	return fs.FS.Remove(name)
}

func (fs *diskFS) RemoveAll(name string) error {
	if err := fs.h.frozen(); err != nil {
		return err
	}
	return fs.FS.RemoveAll(name)
}

func (fs *diskFS) Rename(oldname, newname string) error {
	if err := fs.h.frozen(); err != nil {
		return err
	}
	err := fs.FS.Rename(oldname, newname)
	if err != nil && fs.kindOf(newname) == kindManifest {
		fs.h.fail(err)
	}
	return err
}

// void is a WAL Pebble opens after the failure: Pebble panics when it
// cannot rotate its WAL, and the disk is frozen, so the new WAL is a file
// in memory that is never written out.
func (fs *diskFS) void(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return vfs.NewMem().Create(fs.PathBase(name), c)
}

// OpenDir opens a directory, whose Sync makes creations and renames in it
// durable: a failed one of the store's directory fails the store and is
// dropped, as the WAL's are (a WAL's creation is synced there).
func (fs *diskFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	if filepath.Clean(name) != fs.dir {
		return &otherDir{File: f, h: fs.h}, nil
	}
	return &diskFile{File: f, h: fs.h, kind: kindWAL}, nil
}

// otherDir is a directory other than the store's: a Checkpoint's. Pebble
// panics when the sync of a directory its atomic marker moved in fails, so
// a failed sync is reported done and kept for the Checkpoint to return
// (diskHealth.takeDirSyncErr).
type otherDir struct {
	vfs.File
	h *diskHealth
}

func (d *otherDir) Sync() error {
	if err := d.File.Sync(); err != nil {
		d.h.dirSyncErr.CompareAndSwap(nil, &err)
	}
	return nil
}

func (fs *diskFS) Unwrap() vfs.FS { return fs.FS }

// diskFile is a file Pebble writes (see above).
type diskFile struct {
	vfs.File
	h    *diskHealth
	kind fileKind
}

func (f *diskFile) Write(p []byte) (int, error) {
	if f.h.cause() != nil {
		if f.kind == kindWAL {
			return len(p), nil // dropped: the WAL ends where the failure began
		}
		return 0, f.h.frozen()
	}
	written := 0
	for n := 0; ; n++ {
		w, err := f.File.Write(p[written:])
		written += w
		if err == nil {
			f.h.markWritten()
			return written, nil
		}
		if !isNoSpace(err) || f.kind == kindOther {
			return f.failed(written, len(p), err)
		}
		// The WAL or MANIFEST waits for space: what it holds so far
		// stays, and the rest follows it once there is room.
		f.h.markFull(err)
		if !f.h.waitForSpace(n) {
			return f.failed(written, len(p), err)
		}
	}
}

// failed ends a write of size bytes that met err after written of them.
func (f *diskFile) failed(written, size int, err error) (int, error) {
	switch f.kind {
	case kindWAL:
		f.h.fail(err)
		return size, nil // see Write
	case kindManifest:
		f.h.fail(err)
		return written, err
	}
	// A table's: Pebble fails the flush or compaction and schedules it
	// again at once; the pause keeps that from becoming a busy loop.
	if isNoSpace(err) {
		f.h.markFull(err)
	}
	f.h.pause()
	return written, err
}

func (f *diskFile) WriteAt(p []byte, off int64) (int, error) {
	if f.h.cause() != nil {
		return 0, f.h.frozen()
	}
	n, err := f.File.WriteAt(p, off)
	if err != nil {
		return f.failed(n, len(p), err)
	}
	f.h.markWritten()
	return n, nil
}

func (f *diskFile) Sync() error { return f.synced(f.File.Sync) }

func (f *diskFile) SyncData() error { return f.synced(f.File.SyncData) }

func (f *diskFile) SyncTo(length int64) (bool, error) {
	var full bool
	err := f.synced(func() (err error) {
		full, err = f.File.SyncTo(length)
		return err
	})
	return full, err
}

// synced runs a sync. A failed sync of the WAL or MANIFEST fails the store
// (and the WAL's is reported done: see Write); one of a table is Pebble's
// to handle, as it handles a failed write.
func (f *diskFile) synced(sync func() error) error {
	if f.h.cause() != nil {
		if f.kind == kindWAL {
			return nil
		}
		return f.h.frozen()
	}
	err := sync()
	if err == nil {
		return nil
	}
	switch f.kind {
	case kindWAL:
		f.h.fail(err)
		return nil
	case kindManifest:
		f.h.fail(err)
	default:
		f.h.pause() // see failed
	}
	return err
}

// Close closes the file. A failed Close may have lost writes: for the WAL
// and MANIFEST it fails the store, as a failed sync does.
func (f *diskFile) Close() error {
	err := f.File.Close()
	if err == nil || f.kind == kindOther {
		return err
	}
	return f.synced(func() error { return err })
}

// Preallocate reserves space ahead of writes, an optimisation: on the WAL
// its failure is left to the writes that follow.
func (f *diskFile) Preallocate(off, n int64) error {
	err := f.File.Preallocate(off, n)
	if f.kind == kindWAL {
		return nil
	}
	return err
}

var _ io.Writer = (*diskFile)(nil)

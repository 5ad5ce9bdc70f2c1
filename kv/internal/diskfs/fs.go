package diskfs

import (
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// FS is the filesystem Pebble runs on (see the package comment). Each
// operation that changes the directory asks its Health what the policy
// says before it runs and after; the others are the wrapped FS's.
type FS struct {
	vfs.FS
	h   *Health
	dir string // the store's directory, cleaned
}

// New returns fs as the filesystem of the store in dir, its state kept
// in h.
func New(fs vfs.FS, dir string, h *Health) *FS {
	return &FS{FS: fs, h: h, dir: filepath.Clean(dir)}
}

// Unwrap returns the wrapped filesystem.
func (fs *FS) Unwrap() vfs.FS { return fs.FS }

// kindOf is the kind of the file name; only the store's own directory has
// a WAL and a MANIFEST (a checkpoint's copy of them is a file like any).
func (fs *FS) kindOf(name string) kind {
	if filepath.Clean(fs.PathDir(name)) != fs.dir {
		return kindOther
	}
	base := fs.PathBase(name)
	switch {
	case isWAL(base):
		return kindWAL
	case isManifest(base):
		return kindManifest
	}
	return kindOther
}

// Create creates name for writing, as the policy says (opCreate).
func (fs *FS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.create(name, c, func() (vfs.File, error) { return fs.FS.Create(name, c) })
}

// ReuseForWrite reuses oldname as newname for writing, as Create does.
func (fs *FS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.create(newname, c, func() (vfs.File, error) { return fs.FS.ReuseForWrite(oldname, newname, c) })
}

// create opens name for writing with open, trying again while the policy
// waits for space.
func (fs *FS) create(name string, c vfs.DiskWriteCategory, open func() (vfs.File, error)) (vfs.File, error) {
	k := fs.kindOf(name)
	switch r, err := fs.h.before(k, opCreate); r {
	case replyVoid:
		return fs.void(name, c)
	case replyFrozen:
		return nil, err
	}
	for n := 0; ; n++ {
		f, err := open()
		switch r, err := fs.h.after(k, opCreate, err, n); {
		case r == replyRetry:
			continue
		case r == replyVoid:
			return fs.void(name, c)
		case err != nil:
			return nil, err
		}
		return fs.file(f, k), nil
	}
}

// void is a WAL Pebble opens after the failure: Pebble panics when it
// cannot rotate its WAL, and the disk is frozen, so the new WAL is a file
// in memory that is never written out.
func (fs *FS) void(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	return vfs.NewMem().Create(fs.PathBase(name), c)
}

// OpenReadWrite opens name for reading and writing (opOpenRW).
func (fs *FS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	k := fs.kindOf(name)
	if r, err := fs.h.before(k, opOpenRW); r != replyDisk {
		return nil, err
	}
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	if _, err := fs.h.after(k, opOpenRW, err, 0); err != nil {
		return nil, err
	}
	return fs.file(f, k), nil
}

// OpenDir opens a directory, whose Sync makes creations and renames in it
// durable: the store's is kindDir, any other kindOtherDir.
func (fs *FS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	if filepath.Clean(name) != fs.dir {
		return fs.file(f, kindOtherDir), nil
	}
	return fs.file(f, kindDir), nil
}

// Link links newname to oldname (opLink).
func (fs *FS) Link(oldname, newname string) error {
	return fs.change(newname, opLink, func() error { return fs.FS.Link(oldname, newname) })
}

// Remove removes name (opRemove).
func (fs *FS) Remove(name string) error {
	return fs.change(name, opRemove, func() error { return fs.FS.Remove(name) })
}

// RemoveAll removes name and what it holds (opRemove).
func (fs *FS) RemoveAll(name string) error {
	return fs.change(name, opRemove, func() error { return fs.FS.RemoveAll(name) })
}

// Rename renames oldname to newname (opRename).
func (fs *FS) Rename(oldname, newname string) error {
	return fs.change(newname, opRename, func() error { return fs.FS.Rename(oldname, newname) })
}

// change runs do, operation o on the file name, as the policy says.
func (fs *FS) change(name string, o op, do func() error) error {
	k := fs.kindOf(name)
	if r, err := fs.h.before(k, o); r != replyDisk {
		return err
	}
	_, err := fs.h.after(k, o, do(), 0)
	return err
}

func (fs *FS) file(f vfs.File, k kind) *file { return &file{File: f, h: fs.h, kind: k} }

// file is a file of the store's FS open for writing, or a directory.
type file struct {
	vfs.File
	h    *Health
	kind kind
	// A WAL's space is reserved a chunk ahead of its writes (reserve):
	// written is what Write has written, reserved the end of the space
	// reserved, wanted the end Pebble asked for.
	written, reserved, wanted int64
}

// WALChunk is how far ahead of its writes a WAL's space is reserved.
// Pebble asks for 110% of a memtable at a log's first write and keeps
// several old logs to reuse, so a store's disk held that much per log,
// however little it had written, in blocks its files' sizes do not show
// (cmd/kvbench's README, "The store's Pebble settings"). A chunk keeps the
// reservation's point, that a synced append rarely allocates, at the cost
// of one fallocate per chunk.
const WALChunk = 256 << 10

func (f *file) Write(p []byte) (int, error) {
	n, err := f.write(p)
	if f.kind == kindWAL {
		f.written += int64(n)
		if f.reserved < f.wanted && f.written+WALChunk/2 > f.reserved {
			_ = f.reserve() // as Pebble's: a reservation that fails is not the write's error
		}
	}
	return n, err
}

func (f *file) write(p []byte) (int, error) {
	switch r, err := f.h.before(f.kind, opWrite); r {
	case replyDone:
		return len(p), nil
	case replyFrozen:
		return 0, err
	}
	written := 0
	for n := 0; ; n++ {
		w, err := f.File.Write(p[written:])
		written += w
		switch r, err := f.h.after(f.kind, opWrite, err, n); r {
		case replyRetry:
			continue // the rest follows what the file holds so far
		case replyDone:
			return len(p), nil
		default:
			return written, err
		}
	}
}

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	switch r, err := f.h.before(f.kind, opWriteAt); r {
	case replyDone:
		return len(p), nil
	case replyFrozen:
		return 0, err
	}
	n, err := f.File.WriteAt(p, off)
	if r, err := f.h.after(f.kind, opWriteAt, err, 0); r != replyDone {
		return n, err
	}
	return len(p), nil
}

func (f *file) Sync() error { return f.synced(f.File.Sync) }

func (f *file) SyncData() error { return f.synced(f.File.SyncData) }

func (f *file) SyncTo(length int64) (bool, error) {
	var full bool
	err := f.synced(func() (err error) {
		full, err = f.File.SyncTo(length)
		return err
	})
	return full, err
}

// synced runs sync (opSync).
func (f *file) synced(sync func() error) error {
	if r, err := f.h.before(f.kind, opSync); r != replyDisk {
		return err
	}
	_, err := f.h.after(f.kind, opSync, sync(), 0)
	return err
}

// Close closes the file, which is closed whatever it returns: only what
// it returns follows the policy (opClose).
func (f *file) Close() error {
	err := f.File.Close()
	if err != nil {
		if r, ferr := f.h.before(f.kind, opClose); r != replyDisk {
			return ferr
		}
	}
	_, err = f.h.after(f.kind, opClose, err, 0)
	return err
}

// Preallocate reserves space ahead of writes (opPreallocate); a WAL's, a
// WALChunk at a time as its writes reach it.
func (f *file) Preallocate(off, n int64) error {
	if f.kind != kindWAL {
		return f.preallocate(off, n)
	}
	f.wanted = max(f.wanted, off+n)
	return f.reserve()
}

// reserve reserves a WAL's space up to a WALChunk past its writes, within
// what Pebble asked for.
func (f *file) reserve() error {
	end := min(f.wanted, f.written+WALChunk)
	if end <= f.reserved {
		return nil
	}
	off := f.reserved
	f.reserved = end
	return f.preallocate(off, end-off)
}

func (f *file) preallocate(off, n int64) error {
	if r, err := f.h.before(f.kind, opPreallocate); r != replyDisk {
		return err
	}
	_, err := f.h.after(f.kind, opPreallocate, f.File.Preallocate(off, n), 0)
	return err
}

var (
	_ vfs.FS   = (*FS)(nil)
	_ vfs.File = (*file)(nil)
)

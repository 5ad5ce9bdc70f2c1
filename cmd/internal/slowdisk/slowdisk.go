// Package slowdisk simulates a slow disk under a Pebble store, so that
// kvbench (--disk-latency) can measure the store as it would run with
// data larger than its caches on cloud block storage or a network volume,
// on any machine.
//
// # What it simulates
//
// [New] wraps a [vfs.FS]: every ReadAt of a table file (a name ending in
// ".sst") opened through it for reading blocks its thread for a fixed
// latency before the read is made. It blocks the way a pread that waits
// for the device does: in a system call (nanosleep), so that Go's runtime
// hands the goroutine's P to another thread while the read waits, as it
// does for a slow pread, and the thread stays held. time.Sleep would park
// the goroutine and free the thread, which no disk read does. (Where the
// system has no nanosleep — macOS, Windows — the goroutine locks its
// thread and sleeps, which holds the thread as well.)
//
// # What it does not
//
// It is a fixed latency per read, nothing more: the device has no queue
// (any number of reads wait at once, each for the latency alone), no
// bandwidth limit (a 4 KiB and a 1 MiB read take as long), and no cache
// of its own. The read itself still goes to the wrapped filesystem, so the
// operating system's page cache answers it — the data read is real, only
// the wait is simulated. Writes, syncs, the WAL, the MANIFEST and every
// other file are not slowed. Figures measured on it are figures of a
// simulated disk, never of a real one.
package slowdisk

import (
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// New returns fs with every ReadAt of a table file (".sst") opened
// through Open or OpenReadWrite delayed by latency, blocking its thread
// (see the package comment). A latency of 0 or less returns fs itself.
func New(fs vfs.FS, latency time.Duration) vfs.FS {
	if latency <= 0 {
		return fs
	}
	return &slowFS{FS: fs, latency: latency, block: blockThread}
}

// slowFS is the slow filesystem: every method but Open, OpenReadWrite
// and Unwrap passes through to FS.
type slowFS struct {
	vfs.FS
	latency time.Duration
	// block waits for a read: blockThread, or a test's counter.
	block func(time.Duration)
}

// Open wraps a table file. Pebble v2.1.7 reads tables through Open alone
// (objstorageprovider: vfsOpenForReading with RandomReadsOption, and
// switchToOSReadahead reopening with SequentialReadsOption for
// compactions), so both kinds of handle are slowed.
func (fs *slowFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	return fs.wrap(name, f, err)
}

// OpenReadWrite wraps a table file too, so that every way of opening an
// existing table to read it is slowed, though Pebble reads none this way.
func (fs *slowFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f, err)
}

// Unwrap returns the wrapped filesystem, for vfs.Root: the embedded FS's
// own Unwrap would skip a level.
func (fs *slowFS) Unwrap() vfs.FS { return fs.FS }

// wrap returns f, slowed if name is a table's. Other files are returned
// as they are, so that nothing of theirs is hidden behind a wrapper.
func (fs *slowFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !isTable(name) {
		return f, err
	}
	return &slowFile{File: f, fs: fs}, nil
}

// isTable reports whether name is a table file's.
func isTable(name string) bool { return strings.HasSuffix(name, ".sst") }

// slowFile is a table file whose ReadAt waits first. It embeds the whole
// vfs.File, so that Fd, Prefetch, Stat and the rest reach the file
// itself: Pebble's readahead (Prefetch, fadvise through Fd) keeps working.
type slowFile struct {
	vfs.File
	fs *slowFS
}

// ReadAt waits the latency, then reads: the wait comes first, as a
// device's does before the data arrives.
func (f *slowFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.block(f.fs.latency)
	return f.File.ReadAt(p, off)
}

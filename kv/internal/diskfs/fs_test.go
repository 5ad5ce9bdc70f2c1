package diskfs

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fault is what the disk does at one call: write n bytes, then fail with
// err (nil: the call goes through).
type fault struct {
	n   int
	err error
}

// faultFS is a MemFS whose calls fail as scripted: faults[op] are the
// outcomes of the next calls of op ("create" for Create and ReuseForWrite,
// "openrw", "link", "remove", "rename"; of a file "write", "writeat",
// "sync", "syncdata", "syncto", "close", "preallocate"), in turn; then
// they go through.
type faultFS struct {
	vfs.FS
	faults map[string][]fault
	// reserved are the files' Preallocate calls that went through: offset
	// and length.
	reserved [][2]int64
}

func (fs *faultFS) take(op string) fault {
	q := fs.faults[op]
	if len(q) == 0 {
		return fault{}
	}
	fs.faults[op] = q[1:]
	return q[0]
}

func (fs *faultFS) file(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &faultFile{File: f, fs: fs}, nil
}

func (fs *faultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f := fs.take("create"); f.err != nil {
		return nil, f.err
	}
	return fs.file(fs.FS.Create(name, c))
}

func (fs *faultFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if f := fs.take("create"); f.err != nil {
		return nil, f.err
	}
	return fs.file(fs.FS.ReuseForWrite(oldname, newname, c))
}

func (fs *faultFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if f := fs.take("openrw"); f.err != nil {
		return nil, f.err
	}
	return fs.file(fs.FS.OpenReadWrite(name, c, opts...))
}

func (fs *faultFS) OpenDir(name string) (vfs.File, error) { return fs.file(fs.FS.OpenDir(name)) }

func (fs *faultFS) Link(oldname, newname string) error {
	if f := fs.take("link"); f.err != nil {
		return f.err
	}
	return fs.FS.Link(oldname, newname)
}

func (fs *faultFS) Remove(name string) error {
	if f := fs.take("remove"); f.err != nil {
		return f.err
	}
	return fs.FS.Remove(name)
}

func (fs *faultFS) Rename(oldname, newname string) error {
	if f := fs.take("rename"); f.err != nil {
		return f.err
	}
	return fs.FS.Rename(oldname, newname)
}

type faultFile struct {
	vfs.File
	fs *faultFS
}

func (f *faultFile) Write(p []byte) (int, error) {
	ft := f.fs.take("write")
	if ft.err == nil {
		return f.File.Write(p)
	}
	n, err := f.File.Write(p[:ft.n])
	if err != nil {
		return n, err
	}
	return n, ft.err
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if ft := f.fs.take("writeat"); ft.err != nil {
		return 0, ft.err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Sync() error {
	if ft := f.fs.take("sync"); ft.err != nil {
		return ft.err
	}
	return f.File.Sync()
}

func (f *faultFile) SyncData() error {
	if ft := f.fs.take("syncdata"); ft.err != nil {
		return ft.err
	}
	return f.File.SyncData()
}

func (f *faultFile) SyncTo(length int64) (bool, error) {
	if ft := f.fs.take("syncto"); ft.err != nil {
		return false, ft.err
	}
	return f.File.SyncTo(length)
}

func (f *faultFile) Close() error {
	err := f.File.Close()
	if ft := f.fs.take("close"); ft.err != nil {
		return ft.err
	}
	return err
}

func (f *faultFile) Preallocate(off, n int64) error {
	if ft := f.fs.take("preallocate"); ft.err != nil {
		return ft.err
	}
	f.fs.reserved = append(f.fs.reserved, [2]int64{off, n})
	return f.File.Preallocate(off, n)
}

var (
	enospc = fault{err: syscall.ENOSPC}
	eio    = fault{err: syscall.EIO}
)

// The files of the tests: the store is in db, a checkpoint in cp.
const (
	wal      = "db/000001.log"
	manifest = "db/MANIFEST-000001"
	table    = "db/000002.sst"
	cpWAL    = "cp/000001.log"
	oldWAL   = "db/000000.log"
)

// TestFS_Operations runs each operation of FS and its files through the
// policy: the disk's outcome scripted, the clock fake. Each row opens its
// file (while healthy), puts the store in its state, runs the operation
// and checks what Pebble hears, the Health, and the disk.
func TestFS_Operations(t *testing.T) {
	// A fresh buffer each time: a vfs.File may change what it was given
	// (MemFS does, under invariants and the race detector).
	const hello = "hello world"
	write := func(f vfs.File, _ *FS) (int, error) { return f.Write([]byte(hello)) }
	sync := func(f vfs.File, _ *FS) (int, error) { return 0, f.Sync() }
	closeFile := func(f vfs.File, _ *FS) (int, error) { return 0, f.Close() }
	for _, tc := range []struct {
		name   string
		path   string // the file, or the directory (dir)
		dir    bool
		noOpen bool   // the operation opens it
		state  string // "", "failed", or "closing" (Health.Close)
		faults map[string][]fault
		op     func(f vfs.File, fs *FS) (int, error)

		wantN   int
		wantErr error // matched with errors.Is; nil: none
		failed  bool
		full    bool
		slept   []time.Duration
		on      string // what the file holds on the disk after (readFile), if set
	}{
		{name: "WAL write meets ENOSPC twice: waits, then writes the rest after what it holds",
			path: wal, faults: map[string][]fault{"write": {{n: 3, err: syscall.ENOSPC}, enospc}}, op: write,
			wantN: len(hello), slept: []time.Duration{time.Millisecond, 2 * time.Millisecond}, on: "hello world"},
		{name: "WAL write fails: the store fails, the write reported done",
			path: wal, faults: map[string][]fault{"write": {eio}}, op: write,
			wantN: len(hello), failed: true, on: "<empty>"},
		{name: "WAL write after the failure: dropped",
			path: wal, state: "failed", op: write, wantN: len(hello), failed: true, on: "<empty>"},
		{name: "WAL write meets ENOSPC while closing: the store fails, the write reported done",
			path: wal, state: "closing", faults: map[string][]fault{"write": {enospc}}, op: write,
			wantN: len(hello), failed: true, full: true, on: "<empty>"},
		{name: "MANIFEST write fails: the store fails, Pebble hears",
			path: manifest, faults: map[string][]fault{"write": {{n: 5, err: syscall.EIO}}}, op: write,
			wantN: 5, wantErr: syscall.EIO, failed: true, on: "hello"},
		{name: "MANIFEST write after the failure: refused",
			path: manifest, state: "failed", op: write, wantErr: ErrFailed, failed: true, on: "<empty>"},
		{name: "table write meets ENOSPC: full, paused",
			path: table, faults: map[string][]fault{"write": {enospc}}, op: write,
			wantErr: syscall.ENOSPC, full: true, slept: []time.Duration{FullPause}, on: "<empty>"},
		{name: "table write fails: paused, the store lives",
			path: table, faults: map[string][]fault{"write": {eio}}, op: write,
			wantErr: syscall.EIO, slept: []time.Duration{FullPause}, on: "<empty>"},
		{name: "a WAL outside the store's directory is a file like any",
			path: cpWAL, faults: map[string][]fault{"write": {eio}}, op: write,
			wantErr: syscall.EIO, slept: []time.Duration{FullPause}, on: "<empty>"},
		{name: "table WriteAt meets ENOSPC: full, paused",
			path: table, faults: map[string][]fault{"writeat": {enospc}},
			op:      func(f vfs.File, _ *FS) (int, error) { return f.WriteAt([]byte(hello), 0) },
			wantErr: syscall.ENOSPC, full: true, slept: []time.Duration{FullPause}, on: "<empty>"},
		{name: "WAL sync fails: the store fails, the sync reported done",
			path: wal, faults: map[string][]fault{"sync": {eio}}, op: sync, failed: true},
		{name: "WAL SyncData after the failure: dropped",
			path: wal, state: "failed", faults: map[string][]fault{"syncdata": {eio}},
			op: func(f vfs.File, _ *FS) (int, error) { return 0, f.SyncData() }, failed: true},
		{name: "MANIFEST SyncTo fails: the store fails, Pebble hears",
			path: manifest, faults: map[string][]fault{"syncto": {eio}},
			op: func(f vfs.File, _ *FS) (int, error) {
				_, err := f.SyncTo(1)
				return 0, err
			},
			wantErr: syscall.EIO, failed: true},
		{name: "table sync meets ENOSPC: paused, not full (only a write says so)",
			path: table, faults: map[string][]fault{"sync": {enospc}}, op: sync,
			wantErr: syscall.ENOSPC, slept: []time.Duration{FullPause}},
		{name: "WAL close fails: the store fails, the close reported done",
			path: wal, faults: map[string][]fault{"close": {eio}}, op: closeFile, failed: true},
		{name: "MANIFEST close fails after the failure: the frozen error",
			path: manifest, state: "failed", faults: map[string][]fault{"close": {eio}}, op: closeFile,
			wantErr: ErrFailed, failed: true},
		{name: "MANIFEST close after the failure, succeeding: done",
			path: manifest, state: "failed", op: closeFile, failed: true},
		{name: "table close fails: Pebble hears, no pause",
			path: table, faults: map[string][]fault{"close": {eio}}, op: closeFile, wantErr: syscall.EIO},
		{name: "WAL preallocate fails: left to the writes",
			path: wal, faults: map[string][]fault{"preallocate": {eio}},
			op: func(f vfs.File, _ *FS) (int, error) { return 0, f.Preallocate(0, 1<<20) }},
		{name: "table preallocate fails: Pebble hears",
			path: table, faults: map[string][]fault{"preallocate": {eio}},
			op:      func(f vfs.File, _ *FS) (int, error) { return 0, f.Preallocate(0, 1<<20) },
			wantErr: syscall.EIO},
		{name: "the store's directory's sync fails: the store fails, the sync reported done",
			path: "db", dir: true, faults: map[string][]fault{"sync": {eio}}, op: sync, failed: true},
		{name: "the store's directory's sync after the failure: dropped",
			path: "db", dir: true, state: "failed", faults: map[string][]fault{"sync": {eio}}, op: sync, failed: true},
		{name: "a checkpoint's directory's sync fails: kept for Checkpoint, reported done",
			path: "cp", dir: true, faults: map[string][]fault{"sync": {eio}},
			op: func(f vfs.File, fs *FS) (int, error) {
				if err := f.Sync(); err != nil {
					return 0, err
				}
				return 0, fs.h.TakeDirSyncErr()
			},
			wantErr: syscall.EIO},
		{name: "WAL create fails: the store fails, the WAL is void",
			path: wal, noOpen: true, faults: map[string][]fault{"create": {eio}},
			op: createWrite(wal, hello), wantN: len(hello), failed: true, on: "<none>"},
		{name: "WAL create after the failure: void",
			path: wal, noOpen: true, state: "failed", op: createWrite(wal, hello), wantN: len(hello), failed: true, on: "<none>"},
		{name: "WAL reuse after the failure: void",
			path: wal, noOpen: true, state: "failed",
			op: func(_ vfs.File, fs *FS) (int, error) {
				f, err := fs.ReuseForWrite(oldWAL, wal, vfs.WriteCategoryUnspecified)
				if err != nil {
					return 0, err
				}
				return f.Write([]byte(hello))
			},
			wantN: len(hello), failed: true, on: "<none>"},
		{name: "MANIFEST create meets ENOSPC: waits, then creates; full until a write",
			path: manifest, noOpen: true, faults: map[string][]fault{"create": {enospc}},
			op: func(_ vfs.File, fs *FS) (int, error) {
				_, err := fs.Create(manifest, vfs.WriteCategoryUnspecified)
				return 0, err
			},
			full: true, slept: []time.Duration{time.Millisecond}, on: "<empty>"},
		{name: "table create meets ENOSPC: full, paused",
			path: table, noOpen: true, faults: map[string][]fault{"create": {enospc}}, op: createWrite(table, hello),
			wantErr: syscall.ENOSPC, full: true, slept: []time.Duration{FullPause}, on: "old"},
		{name: "WAL OpenReadWrite fails: the store fails",
			path: wal, noOpen: true, faults: map[string][]fault{"openrw": {eio}},
			op: func(_ vfs.File, fs *FS) (int, error) {
				_, err := fs.OpenReadWrite(wal, vfs.WriteCategoryUnspecified)
				return 0, err
			},
			wantErr: syscall.EIO, failed: true, on: "<none>"},
		{name: "rename to a MANIFEST fails: the store fails",
			path: manifest, noOpen: true, faults: map[string][]fault{"rename": {eio}},
			op:      func(_ vfs.File, fs *FS) (int, error) { return 0, fs.Rename(table, manifest) },
			wantErr: syscall.EIO, failed: true, on: "<none>"},
		{name: "rename to a table fails: Pebble hears",
			path: "db/000003.sst", noOpen: true, faults: map[string][]fault{"rename": {eio}},
			op:      func(_ vfs.File, fs *FS) (int, error) { return 0, fs.Rename(table, "db/000003.sst") },
			wantErr: syscall.EIO, on: "<none>"},
		{name: "remove after the failure: refused, the file left",
			path: table, noOpen: true, state: "failed",
			op:      func(_ vfs.File, fs *FS) (int, error) { return 0, fs.Remove(table) },
			wantErr: ErrFailed, failed: true, on: "old"},
		{name: "RemoveAll after the failure: refused",
			path: table, noOpen: true, state: "failed",
			op:      func(_ vfs.File, fs *FS) (int, error) { return 0, fs.RemoveAll(table) },
			wantErr: ErrFailed, failed: true, on: "old"},
		{name: "link after the failure: refused",
			path: "db/000003.sst", noOpen: true, state: "failed",
			op:      func(_ vfs.File, fs *FS) (int, error) { return 0, fs.Link(table, "db/000003.sst") },
			wantErr: ErrFailed, failed: true, on: "<none>"},
		{name: "link fails: Pebble hears",
			path: "db/000003.sst", noOpen: true, faults: map[string][]fault{"link": {eio}},
			op:      func(_ vfs.File, fs *FS) (int, error) { return 0, fs.Link(table, "db/000003.sst") },
			wantErr: syscall.EIO, on: "<none>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			require.NoError(t, mem.MkdirAll("db", 0o755))
			require.NoError(t, mem.MkdirAll("cp", 0o755))
			writeFile(t, mem, table, "old")  // what a rename or link takes
			writeFile(t, mem, oldWAL, "old") // what a reuse takes
			disk := &faultFS{FS: mem, faults: map[string][]fault{}}
			h, c, _ := newTestHealth()
			fs := New(disk, "db/", h)
			var f vfs.File
			if !tc.noOpen {
				var err error
				if tc.dir {
					f, err = fs.OpenDir(tc.path)
				} else {
					f, err = fs.Create(tc.path, vfs.WriteCategoryUnspecified)
				}
				require.NoError(t, err)
			}
			switch tc.state {
			case "failed":
				h.Fail(errors.New("an earlier failure"))
			case "closing":
				h.Close()
			}
			disk.faults = tc.faults

			n, err := tc.op(f, fs)
			assert.Equal(t, tc.wantN, n, "what Pebble hears was written")
			if tc.wantErr == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.wantErr)
			}
			assert.Equal(t, tc.failed, h.Cause() != nil, "failed")
			assert.Equal(t, tc.full, h.IsFull(), "full")
			assert.Equal(t, tc.slept, c.slept, "waits")
			if tc.on != "" {
				assert.Equal(t, tc.on, readFile(t, mem, tc.path), "on the disk")
			}
		})
	}
}

// TestFS_WALReservesAChunkAhead: Pebble asks for a WAL's space (110% of a
// memtable) at its first write; the FS reserves it a WALChunk past the
// writes as they reach it, never past what Pebble asked for. A table's
// reservation goes through as asked.
func TestFS_WALReservesAChunkAhead(t *testing.T) {
	mem := vfs.NewMem()
	require.NoError(t, mem.MkdirAll("db", 0o755))
	disk := &faultFS{FS: mem, faults: map[string][]fault{}}
	h, _, _ := newTestHealth()
	fs := New(disk, "db/", h)
	quarter := make([]byte, WALChunk/4)

	f, err := fs.Create(wal, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, f.Preallocate(0, 70<<20))
	assert.Equal(t, [][2]int64{{0, WALChunk}}, disk.reserved, "a chunk, not 70 MiB")
	for range 2 {
		_, err = f.Write(quarter)
		require.NoError(t, err)
	}
	assert.Len(t, disk.reserved, 1, "half a chunk written: the rest is still ahead")
	_, err = f.Write(quarter)
	require.NoError(t, err)
	assert.Equal(t, [2]int64{WALChunk, WALChunk * 3 / 4}, disk.reserved[1], "a chunk past the writes")

	disk.reserved = nil
	g, err := fs.Create("db/000003.log", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, g.Preallocate(0, WALChunk+100))
	for range 8 {
		_, err = g.Write(quarter)
		require.NoError(t, err)
	}
	assert.Equal(t, [][2]int64{{0, WALChunk}, {WALChunk, 100}}, disk.reserved, "never past what Pebble asked for")

	disk.reserved = nil
	tf, err := fs.Create(table, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, tf.Preallocate(0, 70<<20))
	assert.Equal(t, [][2]int64{{0, 70 << 20}}, disk.reserved, "a table's, as asked")
}

// createWrite creates name through the FS and writes s to it.
func createWrite(name, s string) func(vfs.File, *FS) (int, error) {
	return func(_ vfs.File, fs *FS) (int, error) {
		f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
		if err != nil {
			return 0, err
		}
		return f.Write([]byte(s))
	}
}

func writeFile(t *testing.T, fs vfs.FS, name, s string) {
	t.Helper()
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = io.WriteString(f, s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// readFile is what name holds on fs, "<none>" if it does not exist.
func readFile(t *testing.T, fs vfs.FS, name string) string {
	t.Helper()
	f, err := fs.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return "<none>"
	}
	require.NoError(t, err)
	defer f.Close()
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	if len(b) == 0 {
		return "<empty>"
	}
	return string(b)
}

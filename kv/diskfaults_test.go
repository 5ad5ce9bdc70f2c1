package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The disk-fault tests fail Pebble's writes, where faults_test.go fails
// its reads: a store on errorfs over a MemFS meets the fault, and is then
// reopened on the MemFS itself — the disk healthy again — to see what
// survived.

const (
	diskBatches   = 30
	diskBatchKeys = 5
	diskFlushAt   = 12 // a Flush after this batch: tables and a MANIFEST edit
)

// writeFault fails the write operation (errorfs's OpIsWrite kinds) of
// index at, counting from when it is armed, with err; at < 0 fails none
// and only counts.
type writeFault struct {
	armed atomic.Bool
	n     atomic.Int32
	at    int32
	err   error
	hit   atomic.Pointer[errorfs.Op]
}

func (f *writeFault) MaybeError(op errorfs.Op) error {
	if !f.armed.Load() || op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
		return nil
	}
	if f.n.Add(1)-1 == f.at {
		f.hit.Store(&op)
		return f.err
	}
	return nil
}

func (f *writeFault) String() string { return fmt.Sprintf("write #%d", f.at) }

func diskKey(batch, i int) []byte { return fmt.Appendf(nil, "b%03d/%d", batch, i) }

// diskRun writes diskBatches synced batches, each setting its diskBatchKeys
// keys to its number, with a Flush after batch diskFlushAt, on a fresh
// MemFS behind fault, then closes the store. It returns the filesystem,
// the batches acknowledged, and the first batch that failed (-1: none).
func diskRun(t *testing.T, fault *writeFault) (mem *vfs.MemFS, acked map[int]bool, firstFailed int, closeErr error) {
	t.Helper()
	mem = vfs.NewMem()
	db, err := Open("", &Options{FS: errorfs.Wrap(mem, fault), Logger: faultsLogger()})
	require.NoError(t, err)
	acked, firstFailed = map[int]bool{}, -1
	fault.armed.Store(true)
	for i := range diskBatches {
		b := db.NewBatch()
		for k := range diskBatchKeys {
			b.Set(diskKey(i, k), fmt.Appendf(nil, "%d", i))
		}
		err := db.Apply(b)
		switch {
		case err == nil:
			require.Equal(t, -1, firstFailed, "batch %d acknowledged after batch %d failed", i, firstFailed)
			acked[i] = true
		case firstFailed < 0:
			firstFailed = i
			require.ErrorIs(t, err, ErrFailed, "batch %d", i)
		default:
			require.ErrorIs(t, err, ErrFailed, "batch %d, after the failure", i)
		}
		if i == diskFlushAt {
			if err := db.Flush(); err != nil && firstFailed < 0 {
				// The fault hit the flush itself: writes may go on (a
				// table's fault is Pebble's to retry) or be refused.
				require.ErrorIs(t, err, ErrFailed)
			}
		}
	}
	closeErr = db.Close()
	if firstFailed >= 0 {
		require.ErrorIs(t, closeErr, ErrFailed, "Close returns the failure")
	}
	fault.armed.Store(false)
	return mem, acked, firstFailed, closeErr
}

// diskCheck reopens mem and checks that every acknowledged batch is there,
// no batch torn, and no batch beyond them but the one that failed.
func diskCheck(t *testing.T, mem *vfs.MemFS, acked map[int]bool, firstFailed int) {
	t.Helper()
	db, err := Open("", &Options{FS: mem, Logger: faultsLogger()})
	require.NoError(t, err, "reopen on the healthy disk")
	defer func() { require.NoError(t, db.Close()) }()
	for i := range diskBatches {
		present := 0
		for k := range diskBatchKeys {
			v, err := db.Get(t.Context(), diskKey(i, k))
			if errors.Is(err, ErrNotFound) {
				continue
			}
			require.NoError(t, err)
			require.Equal(t, fmt.Sprint(i), string(v))
			present++
		}
		require.Contains(t, []int{0, diskBatchKeys}, present, "batch %d is torn: %d of %d keys", i, present, diskBatchKeys)
		if acked[i] {
			require.Equal(t, diskBatchKeys, present, "acknowledged batch %d lost", i)
		} else if present > 0 {
			require.Equal(t, firstFailed, i, "batch %d survived, neither acknowledged nor the one that met the fault", i)
		}
	}
}

// TestDiskFaults_EveryWriteIndex fails each write operation of the run in
// turn — WAL writes and syncs, the flush's table, the MANIFEST edit, the
// directory syncs, Close's — and checks, at every index: no panic and no
// hang; the write that met a WAL or MANIFEST fault fails with ErrFailed,
// and so does every later write; Close says so; a reopen on the healthy
// disk holds every acknowledged batch, none torn, and nothing else but
// perhaps the batch that failed.
func TestDiskFaults_EveryWriteIndex(t *testing.T) {
	count := &writeFault{at: -1}
	mem, acked, failed, err := diskRun(t, count)
	require.NoError(t, err)
	require.Equal(t, -1, failed)
	require.Len(t, acked, diskBatches)
	diskCheck(t, mem, acked, failed)
	total := count.n.Load()
	require.Greater(t, total, int32(2*diskBatches), "every batch writes and syncs the WAL")
	t.Logf("%d write operations", total)

	kinds := map[string]int{}
	var storeFailed int
	for at := range total {
		fault := &writeFault{at: at, err: errorfs.ErrInjected}
		mem, acked, failed, closeErr := diskRun(t, fault)
		op := fault.hit.Load()
		require.NotNil(t, op, "index %d was reached", at)
		what := fmt.Sprintf("%s %s", opName(op.Kind), fileClass(op.Path))
		switch {
		case failed >= 0:
			storeFailed++
			kinds[what+" (store failed)"]++
		case closeErr != nil:
			require.ErrorIs(t, closeErr, ErrFailed)
			storeFailed++
			kinds[what+" (at Close: store failed)"]++
		default:
			kinds[what+" (Pebble retried)"]++
		}
		t.Run(fmt.Sprintf("%03d-%s", at, strings.ReplaceAll(what, " ", "-")), func(t *testing.T) {
			diskCheck(t, mem, acked, failed)
		})
	}
	t.Logf("faults by operation: %v; %d of %d failed the store", kinds, storeFailed, total)
}

// fileClass names the kind of file a path is, for the logs.
func fileClass(path string) string {
	switch {
	case strings.HasSuffix(path, ".log"):
		return "wal"
	case strings.Contains(path, "MANIFEST"):
		return "manifest"
	case strings.HasSuffix(path, ".sst"):
		return "table"
	case strings.Contains(path, "OPTIONS"):
		return "options"
	case strings.Contains(path, "marker"):
		return "marker"
	}
	return "dir"
}

// TestDiskFaults_FailedStoreReadsAndRefuses checks what a failed store
// serves: reads go on (the value of the write that failed included, as
// documented: it reached the memtable), writes fail with ErrFailed wrapping
// the cause, Stats says failed, and Close returns the cause.
func TestDiskFaults_FailedStoreReadsAndRefuses(t *testing.T) {
	mem := vfs.NewMem()
	walSync := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if (op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo) && strings.HasSuffix(op.Path, ".log") {
			return errorfs.ErrInjected
		}
		return nil
	})
	inj := &errorfs.Toggle{Injector: walSync}
	db, err := Open("", &Options{FS: errorfs.Wrap(mem, inj), Logger: faultsLogger()})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1")))
	inj.On()
	err = db.Set([]byte("b"), []byte("2"))
	require.ErrorIs(t, err, ErrFailed)
	assert.ErrorIs(t, err, errorfs.ErrInjected, "the cause is wrapped")
	inj.Off()
	assert.ErrorIs(t, db.Set([]byte("c"), []byte("3")), ErrFailed, "a failed store stays failed")
	assert.ErrorIs(t, db.Delete([]byte("a")), ErrFailed)
	assert.ErrorIs(t, db.DeleteRange(nil, nil), ErrFailed)
	assert.ErrorIs(t, db.Flush(), ErrFailed)

	v, err := db.Get(t.Context(), []byte("a"))
	require.NoError(t, err, "reads go on")
	assert.Equal(t, "1", string(v))
	v, err = db.Get(t.Context(), []byte("b"))
	require.NoError(t, err, "the failed write reached the memtable")
	assert.Equal(t, "2", string(v))
	_, err = db.Get(t.Context(), []byte("c"))
	assert.ErrorIs(t, err, ErrNotFound, "a refused write never reached Pebble")

	st := db.Stats()
	assert.Contains(t, st.Failed, "injected error")
	err = db.Close()
	require.ErrorIs(t, err, ErrFailed)
	assert.ErrorIs(t, err, errorfs.ErrInjected)

	db, err = Open("", &Options{FS: mem, Logger: faultsLogger()})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	v, err = db.Get(t.Context(), []byte("a"))
	require.NoError(t, err)
	assert.Equal(t, "1", string(v))
	_, err = db.Get(t.Context(), []byte("c"))
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Empty(t, db.Stats().Failed, "a reopened store is healthy")
}

// opName names a write operation, for the logs.
func opName(k errorfs.OpKind) string {
	names := map[errorfs.OpKind]string{
		errorfs.OpCreate: "create", errorfs.OpLink: "link", errorfs.OpRemove: "remove", errorfs.OpRemoveAll: "removeall",
		errorfs.OpRename: "rename", errorfs.OpReuseForWrite: "reuse", errorfs.OpMkdirAll: "mkdir", errorfs.OpLock: "lock",
		errorfs.OpFileClose: "close", errorfs.OpFileWrite: "write", errorfs.OpFileWriteAt: "writeat", errorfs.OpFileSync: "sync",
		errorfs.OpFileSyncData: "syncdata", errorfs.OpFileSyncTo: "syncto", errorfs.OpFileFlush: "flush", errorfs.OpFilePreallocate: "preallocate",
	}
	if n, ok := names[k]; ok {
		return n
	}
	return fmt.Sprint(int(k))
}

// noSpace fails, while on, the writes (and creations) of the files whose
// names end in suffix with ENOSPC, as a full disk does.
type noSpace struct {
	on     atomic.Bool
	suffix string
	hits   atomic.Int32
}

// takesSpace reports whether op creates or writes a file whose name ends
// in suffix: what a full disk refuses.
func takesSpace(op errorfs.Op, suffix string) bool {
	switch op.Kind {
	case errorfs.OpCreate, errorfs.OpFileWrite, errorfs.OpFileWriteAt:
		return strings.HasSuffix(op.Path, suffix)
	}
	return false
}

func (n *noSpace) MaybeError(op errorfs.Op) error {
	if !n.on.Load() || !takesSpace(op, n.suffix) {
		return nil
	}
	n.hits.Add(1)
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

func (n *noSpace) String() string { return "ENOSPC on *" + n.suffix }

// logSignals is a logger whose records are the tests' signals: the store
// logs the disk's transitions (markFull's "disk full", markWritten's "disk
// space returned"), after making them, so a test waits on the line, not
// on a poll of Stats.
type logSignals struct {
	mu      sync.Mutex
	signals map[string]chan struct{} // by message prefix, closed at its first record
}

func newLogSignals(prefixes ...string) *logSignals {
	l := &logSignals{signals: map[string]chan struct{}{}}
	for _, p := range prefixes {
		l.signals[p] = make(chan struct{})
	}
	return l
}

func (l *logSignals) Enabled(context.Context, slog.Level) bool { return true }
func (l *logSignals) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logSignals) WithGroup(string) slog.Handler            { return l }

func (l *logSignals) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, ch := range l.signals {
		if strings.HasPrefix(r.Message, p) {
			close(ch)
			delete(l.signals, p)
		}
	}
	return nil
}

// await waits for the first record that starts with prefix; the bound is
// only for a store that never logs it (the test then fails).
func (l *logSignals) await(t *testing.T, prefix string) {
	t.Helper()
	l.mu.Lock()
	ch, ok := l.signals[prefix]
	l.mu.Unlock()
	if !ok {
		return // logged already
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("the store never logged %q", prefix)
	}
}

// TestDiskFaults_FullWAL fills the disk under the WAL: the write in flight
// waits for space (it is not lost, nor torn), new writes fail at once with
// ErrDiskFull, reads go on, Stats says so, and once space returns the
// waiting write completes and writes are accepted again.
func TestDiskFaults_FullWAL(t *testing.T) {
	mem := vfs.NewMem()
	full := &noSpace{suffix: ".log"}
	logged := newLogSignals("disk full")
	db, err := Open("", &Options{FS: errorfs.Wrap(mem, full), Logger: slog.New(logged)})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("a"), []byte("1")))

	full.on.Store(true)
	waiting := make(chan error, 1)
	go func() {
		b := db.NewBatch()
		b.Set([]byte("b"), []byte("2"))
		b.Set([]byte("b2"), []byte("2"))
		waiting <- db.Apply(b)
	}()
	logged.await(t, "disk full")
	require.True(t, db.Stats().DiskFull)
	err = db.Set([]byte("c"), []byte("3"))
	require.ErrorIs(t, err, ErrDiskFull)
	assert.ErrorIs(t, err, syscall.ENOSPC)
	v, err := db.Get(t.Context(), []byte("a"))
	require.NoError(t, err, "reads go on")
	assert.Equal(t, "1", string(v))
	select {
	case err := <-waiting:
		t.Fatalf("the write in flight returned %v while the disk was full", err)
	case <-time.After(50 * time.Millisecond):
	}

	full.on.Store(false)
	select {
	case err := <-waiting:
		require.NoError(t, err, "the write in flight completes once there is space")
	case <-time.After(10 * time.Second):
		t.Fatal("the write in flight still waits with space back")
	}
	require.False(t, db.Stats().DiskFull)
	require.NoError(t, db.Set([]byte("c"), []byte("3")), "writes resume")
	require.NoError(t, db.Close())

	db, err = Open("", &Options{FS: mem, Logger: faultsLogger()})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	for _, k := range []string{"a", "b", "b2", "c"} {
		_, err := db.Get(t.Context(), []byte(k))
		assert.NoError(t, err, "%s survives", k)
	}
	assert.Greater(t, full.hits.Load(), int32(0))
}

// TestDiskFaults_FullFlushAndCompaction fills the disk under the tables: a
// flush (and the compaction after it) fails, Flush says the disk is full
// rather than wait, writes fail with ErrDiskFull, nothing written before is
// lost, and once space returns Pebble's retry succeeds and writes resume.
func TestDiskFaults_FullFlushAndCompaction(t *testing.T) {
	mem := vfs.NewMem()
	full := &noSpace{suffix: ".sst"}
	logged := newLogSignals("disk space returned")
	db, err := Open("", &Options{FS: errorfs.Wrap(mem, full), Logger: slog.New(logged)})
	require.NoError(t, err)
	for i := range 100 {
		require.NoError(t, db.Set(diskKey(i, 0), []byte("v")))
	}
	full.on.Store(true)
	err = db.Flush()
	require.ErrorIs(t, err, ErrDiskFull, "Flush says the disk is full")
	require.ErrorIs(t, db.Set([]byte("x"), []byte("1")), ErrDiskFull)
	_, err = db.Get(t.Context(), diskKey(7, 0))
	require.NoError(t, err, "reads go on")

	full.on.Store(false)
	logged.await(t, "disk space returned") // Pebble's retry of the flush reached the disk
	require.False(t, db.Stats().DiskFull)
	require.NoError(t, db.Set([]byte("x"), []byte("1")), "writes resume")
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())

	db, err = Open("", &Options{FS: mem, Logger: faultsLogger()})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	for i := range 100 {
		_, err := db.Get(t.Context(), diskKey(i, 0))
		require.NoError(t, err)
	}
	assert.Greater(t, full.hits.Load(), int32(0))
}

// TestDiskFaults_Checkpoint fails each write operation of a Checkpoint in
// turn (its flush, links, copies, syncs, the rename into place): the
// Checkpoint returns an error or succeeds, the store itself is not
// failed — its writes go on — and a Checkpoint tried again opens with
// every row.
func TestDiskFaults_Checkpoint(t *testing.T) {
	run := func(t *testing.T, fault *writeFault) (ckptErr error) {
		mem := vfs.NewMem()
		db, err := Open("store", &Options{FS: errorfs.Wrap(mem, fault), Logger: faultsLogger()})
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close()) }()
		for i := range diskBatches {
			require.NoError(t, db.Set(diskKey(i, 0), []byte("v")))
			if i == diskFlushAt {
				require.NoError(t, db.Flush())
			}
		}
		fault.armed.Store(true)
		ckptErr = db.Checkpoint("ckpt")
		fault.armed.Store(false)
		if db.Stats().Failed != "" {
			// The checkpoint's flush met the fault on the store's own WAL
			// or MANIFEST: that fails the store, as any write of it would.
			op := fault.hit.Load()
			require.NotNil(t, op)
			require.True(t, strings.HasPrefix(op.Path, "store/"), "a fault in %s failed the store", op.Path)
			require.Error(t, ckptErr)
			require.ErrorIs(t, db.Set([]byte("after"), []byte("v")), ErrFailed)
			require.ErrorIs(t, db.Close(), ErrFailed)
			db, err = Open("store", &Options{FS: mem, Logger: faultsLogger()})
			require.NoError(t, err)
		}
		require.NoError(t, db.Set([]byte("after"), []byte("v")), "the store is not failed by its checkpoint")
		assert.Empty(t, db.Stats().Failed)
		dest := "ckpt"
		if ckptErr != nil {
			dest = "ckpt2"
			require.NoError(t, db.Checkpoint(dest), "a checkpoint tried again")
		}
		cp, err := Open(dest, &Options{FS: mem, Logger: faultsLogger()})
		require.NoError(t, err, "the checkpoint opens")
		defer func() { require.NoError(t, cp.Close()) }()
		for i := range diskBatches {
			_, err := cp.Get(t.Context(), diskKey(i, 0))
			require.NoError(t, err, "row %d in the checkpoint", i)
		}
		return ckptErr
	}
	count := &writeFault{at: -1}
	require.NoError(t, run(t, count))
	total := count.n.Load()
	require.Positive(t, total)
	failed := 0
	for at := range total {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			if err := run(t, &writeFault{at: at, err: errorfs.ErrInjected}); err != nil {
				failed++
				assert.ErrorIs(t, err, errorfs.ErrInjected)
				assert.True(t, strings.HasPrefix(err.Error(), "kv: checkpoint to "), "%v", err)
			}
		})
	}
	t.Logf("%d write operations in a Checkpoint; a fault at %d of them failed it", total, failed)
}

// compactionNoSpace fails with ENOSPC, while on, the writes of every table
// but the first one created after it was turned on: the flush that lets
// the compaction start gets its table, and the compaction's fail.
type compactionNoSpace struct {
	on    atomic.Bool
	first atomic.Pointer[string]
	hits  atomic.Int32
}

func (c *compactionNoSpace) MaybeError(op errorfs.Op) error {
	if !c.on.Load() || !takesSpace(op, ".sst") {
		return nil
	}
	path := op.Path
	if c.first.CompareAndSwap(nil, &path) || *c.first.Load() == path {
		return nil
	}
	c.hits.Add(1)
	return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

func (c *compactionNoSpace) String() string { return "ENOSPC on compactions" }

// TestDiskFaults_FullCompaction fills the disk under a compaction alone:
// its outputs fail, the disk is marked full (writes fail with
// ErrDiskFull), reads go on, nothing is lost, and once space returns
// Pebble's retry compacts L0 and writes resume.
func TestDiskFaults_FullCompaction(t *testing.T) {
	mem := vfs.NewMem()
	full := &compactionNoSpace{}
	logged := newLogSignals("disk full", "disk space returned")
	db, err := Open("", &Options{FS: errorfs.Wrap(mem, full), Logger: slog.New(logged)})
	require.NoError(t, err)
	l0 := func() int64 { return db.Stats().Storage.Levels[0].Tables }
	// Pebble compacts two L0 tables of a small store into the base level:
	// the second flush makes the second, and its compaction meets the
	// fault. (Over tables already in the output level Pebble would not try
	// again for 30 s: it keeps a failed compaction's span off limits.)
	const flushes = 2
	for f := range flushes {
		if f == flushes-1 {
			full.on.Store(true) // this flush's table is allowed, the compaction's are not
		}
		for i := range 50 {
			require.NoError(t, db.Set(diskKey(i, f), []byte("v")))
		}
		require.NoError(t, db.Flush())
	}
	logged.await(t, "disk full")
	require.Positive(t, full.hits.Load(), "the compaction ran into the full disk")
	require.True(t, db.Stats().DiskFull)
	stuck := l0()
	require.GreaterOrEqual(t, stuck, int64(2), "the compaction's inputs are still in L0")
	require.ErrorIs(t, db.Set([]byte("x"), []byte("1")), ErrDiskFull)
	for f := range flushes {
		_, err := db.Get(t.Context(), diskKey(7, f))
		require.NoError(t, err, "reads go on")
	}
	assert.Equal(t, stuck, l0(), "L0 is not compacted while the disk is full")

	full.on.Store(false)
	logged.await(t, "disk space returned") // Pebble's retry of the compaction reached the disk
	require.False(t, db.Stats().DiskFull, "the mark clears once space returns")
	require.NoError(t, db.Set([]byte("x"), []byte("1")), "writes resume")
	require.NoError(t, db.Flush())
	// Pebble schedules the compaction after the flush on a goroutine of its
	// own and tells the store of none but failed ones: a poll.
	require.Eventually(t, func() bool { return l0() < stuck }, 10*time.Second, 5*time.Millisecond, "the compaction runs again once space returns")
	require.NoError(t, db.Close())

	db, err = Open("", &Options{FS: mem, Logger: faultsLogger()})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	for f := range flushes {
		for i := range 50 {
			_, err := db.Get(t.Context(), diskKey(i, f))
			require.NoError(t, err)
		}
	}
}

// TestDiskFaults_ConcurrentWriters fails a write operation while four
// writers commit synced batches together (Pebble groups their commits):
// no writer hangs or panics, every batch that failed says ErrFailed, and
// a reopen holds every acknowledged batch, none torn.
func TestDiskFaults_ConcurrentWriters(t *testing.T) {
	const writers, perWriter = 4, 15
	run := func(t *testing.T, fault *writeFault) (mem *vfs.MemFS, acked map[int]bool, failedAny bool) {
		mem = vfs.NewMem()
		db, err := Open("", &Options{FS: errorfs.Wrap(mem, fault), Logger: faultsLogger()})
		require.NoError(t, err)
		fault.armed.Store(true)
		results := make([][]error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for j := range perWriter {
					i := w*perWriter + j
					b := db.NewBatch()
					for k := range diskBatchKeys {
						b.Set(diskKey(i, k), fmt.Appendf(nil, "%d", i))
					}
					results[w] = append(results[w], db.Apply(b))
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("a writer hangs")
		}
		acked = map[int]bool{}
		for w, errs := range results {
			for j, err := range errs {
				if err == nil {
					acked[w*perWriter+j] = true
					continue
				}
				failedAny = true
				require.ErrorIs(t, err, ErrFailed)
			}
		}
		closeErr := db.Close()
		if failedAny {
			require.ErrorIs(t, closeErr, ErrFailed)
		}
		fault.armed.Store(false)
		return mem, acked, failedAny
	}
	check := func(t *testing.T, mem *vfs.MemFS, acked map[int]bool) {
		db, err := Open("", &Options{FS: mem, Logger: faultsLogger()})
		require.NoError(t, err)
		defer func() { require.NoError(t, db.Close()) }()
		for i := range writers * perWriter {
			present := 0
			for k := range diskBatchKeys {
				if _, err := db.Get(t.Context(), diskKey(i, k)); err == nil {
					present++
				} else {
					require.ErrorIs(t, err, ErrNotFound)
				}
			}
			require.Contains(t, []int{0, diskBatchKeys}, present, "batch %d is torn", i)
			if acked[i] {
				require.Equal(t, diskBatchKeys, present, "acknowledged batch %d lost", i)
			}
		}
	}
	count := &writeFault{at: -1}
	mem, acked, _ := run(t, count)
	require.Len(t, acked, writers*perWriter)
	check(t, mem, acked)
	total := count.n.Load()
	failedRuns := 0
	for at := int32(0); at < total; at += 3 {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			mem, acked, failed := run(t, &writeFault{at: at, err: errorfs.ErrInjected})
			if failed {
				failedRuns++
			}
			check(t, mem, acked)
		})
	}
	t.Logf("%d write operations; a fault at every third: %d runs failed a writer", total, failedRuns)
}

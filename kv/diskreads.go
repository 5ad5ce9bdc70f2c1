package kv

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/internal/ewma"
	"github.com/coopkv/coopkv/kv/internal/diskfs"
	"github.com/coopkv/coopkv/readpool"
)

// Reads on a slow disk. The read pool bounds the steps on the CPU, not the
// reads in flight (readpool/blocking.go): a step that waits in a pread
// tells the pool, which runs another ready read meanwhile. The store sees
// every table read — Pebble reads its tables through the store's
// filesystem (storeFS.Open) — so it tells the pool exactly when a read
// starts and ends, not a guess from CPU figures.
//
// Only when the disk is slow, though: telling the pool of a read the page
// cache answers in a few microseconds would wake an extra worker for
// nothing, and put more steps on the CPU than Workers until the next step
// boundary. The slowReadRule below decides from the reads' moving average.

// slowReadRule says, from the recent table reads' latency, whether a read is
// slow enough to give its CPU slot away: a pure rule, the times passed in.
// A read from the page cache takes a few microseconds; an SSD's from
// ~80 µs, a network volume's 200 µs to a few ms. Go's runtime takes a P
// from a goroutine in a system call after ~20 µs.
type slowReadRule struct {
	// slow is the moving average at or above which reads tell the pool.
	slow time.Duration
}

// defaultSlowRead is where a disk counts as slow: well above the page
// cache (a 4 KiB pread from it, a few µs), below any device read.
const defaultSlowRead = 30 * time.Microsecond

// next is the moving average after a read that took took, from avg (the
// store's and the pool's one moving average, ewma), each read counted at
// most 2 × slow. The cap makes it a vote: one read that
// took long because its goroutine was preempted (10 ms on a loaded
// machine) cannot make a fast disk slow, while five slow reads in a row
// do, and six fast ones undo it.
func (d slowReadRule) next(avg, took time.Duration) time.Duration {
	return ewma.Next(avg, min(took, 2*d.slow))
}

// blocking reports whether, with the moving average at avg, the next read
// should tell the pool.
func (d slowReadRule) blocking(avg time.Duration) bool { return avg >= d.slow }

// diskReads is what the store's filesystem knows of its table reads: their
// moving average latency, and the pool to tell of slow ones.
type diskReads struct {
	policy slowReadRule
	epoch  time.Time
	// avg is the moving average read latency. Reads update it without a
	// lock: two racing updates lose one, which only makes the average a
	// little slower to move.
	avg  ewma.Duration
	pool atomic.Pointer[readpool.Pool] // nil until the store has one, and without a pool
	// reads and told count the table reads, and those that told the pool;
	// took is their time (Stats.Storage).
	reads, told, took atomic.Int64
	// tables holds, per table file number, the bytes read from it: what
	// it put into the block cache (and what compactions read of it), for
	// the hot set (hotset.go). TableDeleted drops a table's entry.
	tables sync.Map // uint64 → *tableReads
}

// tableReads is what was read of one table.
type tableReads struct {
	size int64 // the file's size when first opened
	read atomic.Int64
}

// table returns the entry of the table file name, of size bytes.
func (r *diskReads) table(name string, size int64) *tableReads {
	num, ok := diskfs.FileNum(name)
	if !ok {
		return &tableReads{size: size}
	}
	t, _ := r.tables.LoadOrStore(num, &tableReads{size: size})
	return t.(*tableReads)
}

// forget drops the entry of a deleted table.
func (r *diskReads) forget(num uint64) { r.tables.Delete(num) }

// newDiskReads watches reads that are slow from an average of slow (0 =
// defaultSlowRead).
func newDiskReads(slow time.Duration) *diskReads {
	if slow == 0 {
		slow = defaultSlowRead
	}
	return &diskReads{policy: slowReadRule{slow: slow}, epoch: time.Now()}
}

// slow reports whether the disk's reads are slow now.
func (r *diskReads) slow() bool { return r.policy.blocking(r.avg.Load()) }

// enter is called before a table read: it tells the pool if the disk is
// slow, and returns the read's start and whether it told.
func (r *diskReads) enter() (time.Duration, *readpool.Pool) {
	start := time.Since(r.epoch)
	if !r.slow() {
		return start, nil
	}
	p := r.pool.Load()
	if p != nil {
		p.EnterBlocking()
	}
	return start, p
}

// exit is called after the read enter began: it updates the average and
// tells told, the pool enter told, that the read is over.
func (r *diskReads) exit(start time.Duration, told *readpool.Pool) {
	took := time.Since(r.epoch) - start
	r.avg.Store(r.policy.next(r.avg.Load(), took))
	r.reads.Add(1)
	r.took.Add(int64(took))
	if told != nil {
		r.told.Add(1)
		told.ExitBlocking()
	}
}

// tableFile is a table open for reading, its reads watched.
type tableFile struct {
	vfs.File
	reads *diskReads
	table *tableReads
}

// ReadAt reads from the table, telling the pool while it waits on a slow
// disk.
func (f *tableFile) ReadAt(p []byte, off int64) (int, error) {
	start, told := f.reads.enter()
	n, err := f.File.ReadAt(p, off)
	f.reads.exit(start, told)
	f.table.read.Add(int64(n))
	return n, err
}

package kv

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/scan"
)

// shortMultiGet is the most keys a MultiGet may read and still be spawned
// as a point read (readpool.SpawnOptions.Short): a few microseconds each.
const shortMultiGet = 16

// directCheckEvery is how many keys a MultiGet without a pool reads
// between looks at its context: a few hundred microseconds' worth.
const directCheckEvery = 64

// MultiGet reads many keys as one read-pool task over one consistent view
// of the store (a Pebble iterator opened by its first step, so it sees
// every write that completed before the call). values[i] belongs to
// keys[i]: nil when the key is missing, a non-nil (possibly empty) slice
// when present. Keys may repeat and come in any order; an empty key is
// ErrEmptyKey. The caller owns the result, every slice of it its own.
//
// The keys are read in key order, so that each seek starts where the last
// one ended; the task yields between keys once its time slice is used,
// like a scan. It does not consult the row cache: hits taken at different
// moments would not be one view.
//
// On a slow disk (one whose recent table reads average 30 µs or more) a
// MultiGet of 8 keys or more is split instead: its sorted keys in up to 16
// contiguous parts, each a read-pool task of its own, all reading one
// snapshot taken by the call, so that their reads wait on the disk side by
// side. Each part counts against the pool's MaxTasks.
func (db *DB) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	return db.multiGet(ctx, db, keys)
}

// multiGet is a MultiGet of keys from v: db itself, one of its snapshots
// or a Txn's.
func (db *DB) multiGet(ctx context.Context, v view, keys [][]byte) ([][]byte, error) {
	for _, k := range keys {
		if len(k) == 0 {
			return nil, v.closedOr(multiGetError(len(keys), ErrEmptyKey))
		}
	}
	o, err := db.readOptions(ctx, firstOf(keys), true)
	if err != nil {
		return nil, v.closedOr(multiGetError(len(keys), err))
	}
	t := newMultiGet(db, v, keys)
	var bounds []int // where to cut the keys; nil: one task
	if db.pool != nil && db.reads.slow() {
		bounds = multiGetParts(len(keys))
	}
	switch {
	case db.pool == nil:
		if err := ctx.Err(); err != nil {
			return nil, v.closedOr(multiGetError(len(keys), err))
		}
		// Under mu, shared, as a call into Pebble is: Close waits for it.
		if err := db.enter(); err != nil {
			return nil, multiGetError(len(keys), err)
		}
		// No pool to end it at a step: look at ctx every directCheckEvery
		// keys, so that a deadline holds for a large request too.
		n := 0
		stopped := func() bool {
			n++
			return n%directCheckEvery == 0 && ctx.Err() != nil
		}
		if !t.read(stopped, func(int64, int64) {}) {
			t.err = ctx.Err()
		}
		t.close()
		db.mu.RUnlock()
	case bounds != nil:
		t.err = db.readParts(ctx, t, bounds, o, v)
	default:
		o.Inline, o.Short = true, len(keys) <= shortMultiGet
		if err := db.pool.Go(ctx, t, o); err != nil {
			return nil, v.closedOr(multiGetError(len(keys), err))
		}
		<-t.done
	}
	if t.err != nil {
		return nil, v.closedOr(multiGetError(len(keys), t.err))
	}
	return t.vals, nil
}

// multiGetError is the error of a MultiGet of n keys that failed with err.
func multiGetError(n int, err error) error {
	return fmt.Errorf("kv: multiget of %d keys: %w", n, storeErr(err))
}

// multiGetTask is a MultiGet as a read-pool task.
type multiGetTask struct {
	db    *DB
	v     view        // the view the MultiGet reads, which judges expiry
	now   int64       // the time it judges expiry at (0: no value can expire)
	r     scan.Reader // v's reader, or a snapshot of it (readParts)
	keys  [][]byte
	order []int    // indexes of keys, in key order (a part's: its share of them)
	next  int      // the next of order to read
	vals  [][]byte // the whole MultiGet's, shared by its parts: each writes its own indexes
	it    *pebble.Iterator
	err   error
	// done receives the task when it has ended: its own channel, or one
	// that all the parts of a MultiGet share, buffered for every one.
	done chan *multiGetTask
}

func newMultiGet(db *DB, v view, keys [][]byte) *multiGetTask {
	t := &multiGetTask{db: db, v: v, r: v.reader(), keys: keys, order: make([]int, len(keys)), vals: make([][]byte, len(keys)), done: make(chan *multiGetTask, 1)}
	for i := range t.order {
		t.order[i] = i
	}
	if db.tagged {
		t.now = v.at() // one time for every key, its parts' too
	}
	slices.SortStableFunc(t.order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	return t
}

// read reads the keys left, asking yield before each but the first; it
// reports whether it read them all. charge is told each key's row and
// bytes.
func (t *multiGetTask) read(yield func() bool, charge func(rows, bytes int64)) bool {
	if t.it == nil {
		if t.it, t.err = t.r.NewIter(nil); t.err != nil {
			t.it = nil
			return true
		}
	}
	for ; t.next < len(t.order); t.next++ {
		if yield() {
			return false
		}
		i := t.order[t.next]
		key := t.keys[i]
		if t.next > 0 {
			if prev := t.order[t.next-1]; bytes.Equal(t.keys[prev], key) {
				// A repeat: its own copy of the same value.
				if t.vals[prev] != nil {
					t.vals[i] = bytes.Clone(t.vals[prev])
				}
				continue
			}
		}
		if !t.it.SeekGE(key) || !bytes.Equal(t.it.Key(), key) {
			if err := t.it.Error(); err != nil {
				t.err = err
				return true
			}
			charge(1, 0)
			continue
		}
		v, err := t.it.ValueAndErr()
		if err != nil {
			t.err = err
			return true
		}
		val, exp, err := t.db.decode(v)
		if err == nil {
			_, _, err = judgedAt(t.v, t.now, nil, exp)
		}
		switch {
		case err == ErrNotFound: // expired
			charge(1, int64(len(key)+len(v)))
			continue
		case err != nil:
			t.err = fmt.Errorf("key %q: %w", key, err)
			return true
		}
		t.vals[i] = append(make([]byte, 0, len(val)), val...) // non-nil when empty
		charge(1, int64(len(key)+len(v)))
	}
	return true
}

// close closes the iterator, keeping its error if the reads had none.
func (t *multiGetTask) close() {
	if t.it != nil {
		if err := t.it.Close(); err != nil && t.err == nil {
			t.err = err
		}
		t.it = nil
	}
}

// Step implements readpool.Task.
func (t *multiGetTask) Step(sc *readpool.StepContext) readpool.Status {
	if !t.read(sc.ShouldYield, sc.Charge) {
		return readpool.Yield
	}
	return readpool.Ready
}

// Done implements readpool.Task: the iterator is closed by whoever ends the
// task, a worker or a cancel.
func (t *multiGetTask) Done(err error) {
	t.close()
	if err != nil {
		t.err = err
	}
	t.done <- t // never blocks: buffered for every task that sends on it
}

// Splitting a MultiGet on a slow disk. One task reads its keys one after
// another: on a disk whose reads take 1 ms, 100 keys take 100 ms however
// idle the disk is. So on a slow disk (diskReads.slow) the sorted keys are
// cut into contiguous parts, each a task of its own with its own iterator
// on one shared view, and their reads wait on the disk side by side: a
// step blocked in a table read gives its CPU slot away (diskreads.go), so
// the parts overlap without holding more than Workers slots on the CPU.
// In memory a part would only add a task's cost, and nothing is split.
const (
	// minPartKeys is the fewest keys a part reads. A part costs a task, a
	// hand-off to a worker and an iterator, a few microseconds of CPU,
	// against at least four reads of 30 µs or more (slowReadRule's slow);
	// it also makes 2 × 4 = 8 keys the smallest MultiGet that is split,
	// since fewer would leave a part below 4 keys.
	minPartKeys = 4
	// maxParts bounds the parts of one MultiGet, so that one request takes
	// a bounded share of the pool: of MaxTasks (2,000 a worker) and of the
	// steps that may wait on the disk at once (MaxWorkers, 64 a worker),
	// which the other reads need too. Past 16, more parts gained little
	// (cmd/kvbench's README, MultiGet).
	maxParts = 16
)

// multiGetParts returns where a MultiGet of n sorted keys is cut on a slow
// disk: part i reads keys [b[i], b[i+1]), len(b)-1 parts as even as can
// be, each of minPartKeys keys or more, at most maxParts. It returns nil
// when the keys make one part only.
func multiGetParts(n int) []int {
	k := min(n/minPartKeys, maxParts)
	if k < 2 {
		return nil
	}
	b := make([]int, k+1)
	for i := range b {
		b[i] = i * n / k
	}
	return b
}

// readParts reads whole's keys as the parts bounds marks, each a task
// spawned with o, all on one view of v, into whole.vals. It returns the
// first error a part met, or that spawning one met, once every part it
// spawned has ended and closed its iterator, and the snapshot it took is
// closed too. A part may read a key its neighbour reads too (a repeat cut
// apart): on one view it gets the same value, in a copy of its own.
func (db *DB) readParts(ctx context.Context, whole *multiGetTask, bounds []int, o readpool.SpawnOptions, v view) (err error) {
	if err := ctx.Err(); err != nil {
		return err // no snapshot for nothing
	}
	r := v.reader()
	if !v.fixed() {
		// The parts open their iterators at different moments: on the
		// live store each would see the writes completed by then. A
		// snapshot registered with the store, so that DB.Close closes it
		// if it comes first, keeps them on one view.
		s, err := db.snapshot()
		if err != nil {
			return err
		}
		defer func() {
			if cerr := s.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		r = s
	}
	// Once one part has failed, or one could not be spawned, the MultiGet
	// fails whatever the others read: pctx ends them at their next step
	// (at once while queued), and the caller's own deadline or cancel
	// reaches them through it.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan *multiGetTask, len(bounds)-1)
	spawned := 0
	for i := range len(bounds) - 1 {
		p := &multiGetTask{db: db, v: whole.v, now: whole.now, r: r, keys: whole.keys, order: whole.order[bounds[i]:bounds[i+1]], vals: whole.vals, done: ended}
		// Not inline: the caller would step its part before it spawns the
		// next, one disk read each. Not short: on a slow disk no part
		// ends in microseconds.
		if err = db.pool.Go(pctx, p, o); err != nil {
			cancel()
			break
		}
		spawned++
	}
	// Every spawned part's Done is called, however it ends; its send on
	// ended follows its last write to vals.
	for range spawned {
		if p := <-ended; p.err != nil && err == nil {
			err = p.err
			cancel()
		}
	}
	return err
}

package kv

import (
	"runtime"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/internal/valfmt"
	"github.com/coopkv/coopkv/readpool"
)

// warmTask reads the warmer's spans, a batch of keys between looks at the
// policy and the pool. Its iterator is its own; Done closes it.
//
// The pool's lowest level orders warming behind the reads in its queue,
// but a Get that runs on its caller's goroutine, or a worker that steps
// beside the warmer, shares the CPU with it as an equal, and so do the
// writers and Pebble's compactions. So the warmer takes only the CPU the
// process leaves: after a step during which the rest of the process used
// more than half of the CPU (warmBusy), it waits warmRestBusy (warmRest).
// Warming competes for that CPU with the reads it would spare, whose own
// misses fill the cache with the hot blocks first. Idle, it runs back to
// back.
type warmTask struct {
	w    *warmer
	db   *DB
	it   *pebble.Iterator
	span warmSpan
	// rows is the batch of the row cache's saved keys the task is reading.
	rows [][]byte
	n    int // keys read of the span
	told int // of them, counted in the warmer's figures
	// cpu and wall are the process's CPU time and the clock when the last
	// step began, took that step's time, and stepped says a step has run
	// since the task began or last paused.
	cpu     time.Duration
	wall    time.Time
	took    time.Duration
	stepped bool
	// rest wakes the task after a pause; Done stops it.
	rest *time.Timer
}

// resting says whether the step should pause instead, having just begun
// after a step of took (warmRest); it arms the wake.
func (t *warmTask) resting(sc *readpool.StepContext, took time.Duration) bool {
	cpu, wall := readpool.ProcessCPU(), time.Now()
	d := warmRest(cpu-t.cpu-took, wall.Sub(t.wall), runtime.GOMAXPROCS(0))
	t.cpu, t.wall = cpu, wall
	if d == 0 {
		return false
	}
	wake := sc.Waker()
	if t.rest == nil {
		t.rest = time.AfterFunc(d, wake.Wake)
	} else {
		t.rest.Reset(d)
	}
	return true
}

// count adds the keys read since the last count to the warmer's figures.
func (t *warmTask) count() {
	t.w.stats.keys.Add(int64(t.n - t.told))
	t.told = t.n
}

// Step reads keys until the step's slice is used, the policy stands down,
// or no span is left.
func (t *warmTask) Step(sc *readpool.StepContext) readpool.Status {
	if !t.stepped {
		t.cpu, t.wall = readpool.ProcessCPU(), time.Now() // the window starts
	} else if t.resting(sc, t.took) {
		t.stepped = false
		t.w.stats.rests.Add(1)
		return readpool.Pending
	}
	start := time.Now()
	defer func() {
		t.took, t.stepped = time.Since(start), true
		t.w.stats.busy.Add(int64(t.took))
	}()
	return t.step(sc)
}

func (t *warmTask) step(sc *readpool.StepContext) readpool.Status {
	for {
		if len(t.rows) > 0 {
			if !t.readRows(sc) {
				return readpool.Yield
			}
			continue
		}
		if t.it == nil {
			s, rows, ok := t.w.next()
			if !ok {
				return readpool.Ready
			}
			if rows != nil {
				t.rows = rows
				continue
			}
			if all, err := t.db.pdb.EstimateDiskUsage(s.lo, s.hi); err == nil && !warmDense(uint64(s.bytes), all) {
				t.w.stats.spansSparse.Add(1)
				continue
			}
			it, err := t.db.pdb.NewIter(&pebble.IterOptions{
				LowerBound: s.lo, UpperBound: append(slices.Clip(s.hi), 0), // hi included
				KeyTypes: pebble.IterKeyTypePointsOnly,
			})
			if err != nil { // the span is dropped: a later flush may bring it back
				t.w.endTurn()
				return readpool.Ready
			}
			t.it, t.span, t.n = it, s, 0
			// A prefix seek reads the tables' filter blocks, which a Get
			// reads first and a scan never does.
			t.it.SeekPrefixGE(s.lo)
			t.it.First()
		}
		for ; t.it.Valid(); t.it.Next() {
			if t.n%warmCheckEvery == 0 && t.n > 0 {
				if t.w.hooks.beforeCheck != nil {
					t.w.hooks.beforeCheck()
				}
				if sc.ShouldYield() {
					return readpool.Yield
				}
				t.count()
				if v := t.w.verdict(); v != warmGo {
					t.w.putBack(t.span, t.it.Key(), v)
					t.closeIter()
					return readpool.Ready
				}
			}
			t.n++
		}
		t.w.stats.spansWarmed.Add(1)
		t.closeIter()
	}
}

// closeIter closes the span's iterator and counts what it read.
func (t *warmTask) closeIter() {
	if t.it == nil {
		return
	}
	st := t.it.Stats().InternalStats
	t.count()
	t.w.stats.blockBytes.Add(int64(st.BlockBytes - st.BlockBytesInCache))
	_ = t.it.Close()
	t.it, t.n, t.told = nil, 0, 0
}

// Done closes the iterator of a task ended early (the store's Close); the
// span it was reading is dropped with the store.
func (t *warmTask) Done(err error) {
	if t.rest != nil {
		t.rest.Stop()
	}
	t.closeIter()
	if err != nil {
		t.w.endTurn()
	}
}

// readRows reads the task's batch of the keys the row cache held when the
// hot set was saved back into it, as a Get that missed would (its stamp,
// Pebble, the put), but past the doorkeeper: these keys have been read
// before. False means it yielded, the rest of the batch still the task's.
func (t *warmTask) readRows(sc *readpool.StepContext) bool {
	rc := t.db.cache
	for i := 0; len(t.rows) > 0; i++ {
		if i > 0 {
			if t.w.hooks.beforeRowCheck != nil {
				t.w.hooks.beforeRowCheck()
			}
			if sc.ShouldYield() {
				return false
			}
		}
		key := t.rows[0]
		t.rows = t.rows[1:]
		st := rc.stamp(key)
		v, closer, err := t.db.pdb.Get(key)
		t.w.stats.rowsRead.Add(1)
		if err != nil {
			continue // gone since, or unreadable: a Get will say so
		}
		val, exp, err := t.db.decode(v)
		if err == nil && (exp == 0 || !valfmt.Expired(exp, t.db.now())) && rc.putIf(key, val, exp, st, false) {
			t.w.stats.rowsCached.Add(1)
		}
		_ = closer.Close()
	}
	return true
}

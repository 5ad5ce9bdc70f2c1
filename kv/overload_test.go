package kv

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// TestOverload_BusyFailsFastDeadlinesHoldHeapStaysBounded floods a store
// of one worker and four places (MaxTasks) with scans, Gets and
// coprocessor requests, first while its worker is held by a Get that
// cannot finish (openSaturated), then while it runs freely:
//
//   - with every place taken, every read is refused with ErrBusy — and
//     returns while the worker is still held, so it did not wait for one;
//   - a read with a short deadline that finds a place ends with
//     DeadlineExceeded while the worker is still held;
//   - the heap after the floods is within a generous bound of the heap
//     before them: refused reads leave nothing behind;
//   - after the floods, reads succeed.
func TestOverload_BusyFailsFastDeadlinesHoldHeapStaysBounded(t *testing.T) {
	const (
		keys       = 2000
		maxTasks   = 4
		flooders   = 200
		perFlooder = 10
		heapBound  = 64 << 20
	)
	db, release := openSaturated(t, Options{MaxTasks: maxTasks})
	row, err := coproc.EncodeRow(map[string]any{"v": int64(1)})
	require.NoError(t, err)
	load(t, db, keys, func(int) []byte { return row })
	ctx := context.Background()
	heapBefore := heapAlloc()

	// Take every place with scans that queue behind the held Get. The
	// held Get may run inline (it takes no place) or on the worker (it
	// takes one), so the first refusal says where the limit is. Scan
	// reports a refusal at once, in Err.
	var fillers []*Iterator
	for len(fillers) <= maxTasks {
		it := db.Scan(ctx, nil, nil, nil)
		if err := it.Err(); err != nil {
			require.ErrorIs(t, err, ErrBusy)
			break
		}
		fillers = append(fillers, it)
	}
	defer func() {
		for _, it := range fillers {
			assert.NoError(t, it.Close())
		}
	}()
	require.GreaterOrEqual(t, len(fillers), maxTasks-1, "the pool took up to MaxTasks scans")
	require.LessOrEqual(t, len(fillers), maxTasks)
	ps := db.Stats().Pool
	require.Equal(t, maxTasks, ps.Queued+ps.Running, "every place is taken: %+v", ps)

	// The flood, all while the worker is held.
	t.Run("busy", func(t *testing.T) {
		errs := make(chan error, flooders*perFlooder)
		for g := range flooders {
			go func() {
				for i := range perFlooder {
					errs <- overloadRead(ctx, db, g*perFlooder+i)
				}
			}()
		}
		got := collect(t, errs, flooders*perFlooder, release)
		for _, err := range got {
			assert.ErrorIs(t, err, ErrBusy)
		}
		assert.GreaterOrEqual(t, db.Stats().Pool.RejectedBusy, int64(flooders*perFlooder))
	})

	// One place is freed: reads with a short deadline take it in turn,
	// queue behind the held worker, and end at their deadline.
	t.Run("deadline", func(t *testing.T) {
		require.NoError(t, fillers[0].Close())
		fillers = fillers[1:]
		const timeout = 20 * time.Millisecond
		for i := range 3 {
			errs := make(chan error, 1)
			go func() {
				dctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				errs <- overloadRead(dctx, db, i)
			}()
			got := collect(t, errs, 1, release)
			assert.ErrorIs(t, got[0], context.DeadlineExceeded, "read %d", i)
		}
		// Many at once: each either finds the place (and its deadline) or
		// finds none.
		const n = 50
		errs := make(chan error, n)
		for i := range n {
			go func() {
				dctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				errs <- overloadRead(dctx, db, i)
			}()
		}
		deadlines := 0
		for _, err := range collect(t, errs, n, release) {
			if errors.Is(err, context.DeadlineExceeded) {
				deadlines++
				continue
			}
			assert.ErrorIs(t, err, ErrBusy)
		}
		assert.Positive(t, deadlines, "some of the reads found the free place")
		t.Logf("%d of %d ended at their deadline, the rest were busy", deadlines, n)
	})
	heapFlood := heapAlloc()

	// The worker is let go: the queued scans run, and so does a flood of
	// whole scans, Gets and coprocessor requests, of which some find no
	// place.
	release()
	for _, it := range fillers {
		rows := 0
		for it.Next() {
			rows++
		}
		assert.NoError(t, it.Err())
		assert.Equal(t, keys, rows, "a queued scan reads everything once the worker is free")
	}
	t.Run("free", func(t *testing.T) {
		var ok, busy atomic.Int64
		var wg sync.WaitGroup
		for g := range flooders {
			wg.Go(func() {
				for i := range perFlooder / 2 {
					switch err := overloadRead(ctx, db, g*perFlooder+i); {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, ErrBusy):
						busy.Add(1)
					default:
						assert.NoError(t, err)
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%d reads succeeded, %d were busy", ok.Load(), busy.Load())
		assert.Positive(t, ok.Load())
	})
	heapAfter := heapAlloc()
	t.Logf("heap: %d KiB before, %d KiB after the held flood, %d KiB after the free one",
		heapBefore>>10, heapFlood>>10, heapAfter>>10)
	assert.Less(t, heapFlood-heapBefore, int64(heapBound))
	assert.Less(t, heapAfter-heapBefore, int64(heapBound))

	got, err := db.Get(ctx, keyN(keys/2))
	require.NoError(t, err, "a Get after the flood")
	assert.Equal(t, row, got)
}

// overloadRead is read i of a flood: a whole scan, a Get, or a
// coprocessor count over every key. A complete read returns nil; a Get
// of a key that is not there is complete too.
func overloadRead(ctx context.Context, db *DB, i int) error {
	switch i % 3 {
	case 0:
		it := db.Scan(ctx, nil, nil, nil)
		defer it.Close()
		for it.Next() {
		}
		return it.Err()
	case 1:
		_, err := db.Get(ctx, keyN(i))
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	default:
		_, err := db.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}})
		return err
	}
}

// heapAlloc is the live heap, in bytes, after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

package kv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// The cancellation storm: many scans and coprocessor requests at once, each
// ended at a random point — its context cancelled, its iterator closed
// mid-iteration (by its reader or by another goroutine), or the store
// closed under all of them. Every call must return, every Close must
// return nil, what a read returns before it ends must be right, and no
// goroutine may outlive the test (TestMain runs goleak).
var stormSeed = flag.Uint64("storm-seed", 0, "seed of TestStorm (0 = from the clock); a failing run prints its seed")

const (
	stormKeys  = 20000
	stormReads = 1000
	// stormGuard bounds a storm: a read still running after it is a hang.
	stormGuard = 30 * time.Second
	// stormStopRows bounds the rows a read is let read before its reader
	// ends it.
	stormStopRows = 500
	// stormCappedRU is the rate of the storm's capped group, whose bucket
	// the test empties first: its reads are held for tokens.
	stormCappedRU = 100
)

// stormGroups are the groups the reads of a storm with resource control
// take turns in.
var stormGroups = [...]string{"default", "fast", "capped"}

// stormData is what a storm's store holds: keys[i] = keyN(i) holds
// rows[i] = {"v": i}.
type stormData struct{ keys, rows [][]byte }

func stormLoad(t *testing.T, db *DB) *stormData {
	t.Helper()
	d := &stormData{keys: make([][]byte, stormKeys), rows: make([][]byte, stormKeys)}
	for i := range stormKeys {
		row, err := coproc.EncodeRow(map[string]any{"v": int64(i)})
		require.NoError(t, err)
		d.keys[i], d.rows[i] = keyN(i), row
	}
	load(t, db, stormKeys, func(i int) []byte { return d.rows[i] })
	return d
}

// stormEnd is how a read of the storm is ended.
type stormEnd int

const (
	endCancel      stormEnd = iota // its reader cancels its context after some rows
	endCancelAsync                 // a timer cancels its context
	endClose                       // its reader closes the iterator after some rows
	endCloseAsync                  // another goroutine closes the iterator while it reads
	endNone                        // nothing: it runs to its end, or to the store's Close
	stormEnds
)

func (e stormEnd) String() string {
	return [...]string{"cancel", "cancel-async", "close", "close-async", "none"}[e]
}

// stormTally counts how the reads of a storm ended.
type stormTally struct {
	mu    sync.Mutex
	count map[string]int
}

func (s *stormTally) add(what string, err error) {
	switch {
	case err == nil:
		what += " ended"
	case errors.Is(err, ErrClosed):
		what += " ErrClosed"
	case errors.Is(err, context.Canceled):
		what += " Canceled"
	default:
		what += " other"
	}
	s.mu.Lock()
	s.count[what]++
	s.mu.Unlock()
}

func TestStorm_CancelledReadsAllReturn(t *testing.T) {
	seed := *stormSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for _, c := range []struct {
		name    string
		opts    Options
		closeDB bool // close the store in the middle of the storm
	}{
		{"mlfq", Options{}, false},
		{"mlfq-db-close", Options{}, true},
		{"direct-db-close", Options{Scheduler: SchedulerDirect}, true},
		// Resource control: the reads spread over three groups, one of
		// them capped so that its reads are held for tokens when their
		// end comes.
		{"groups", Options{ResourceControl: true}, false},
		{"groups-db-close", Options{ResourceControl: true}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("replay with: go test ./kv -run 'TestStorm_CancelledReadsAllReturn/%s' -storm-seed %d", c.name, seed)
			o := c.opts
			o.InMemory = true
			db, err := Open("", &o)
			require.NoError(t, err)
			if o.ResourceControl {
				require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "fast", RUPerSec: 1e6, Burstable: true}))
				require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "capped", RUPerSec: stormCappedRU}))
				// Empty the capped group's bucket and half a second more, as
				// a big read would, so that its reads are held from the start
				// however little the storm's own reads cost (far less
				// without the race detector than with it).
				acc := db.pool.Options().Accountant
				require.NotNil(t, acc)
				acc.Charge(&readpool.Entry{Group: "capped", Tag: db.ResourceGroups().Resolve("capped")},
					readpool.Usage{Bytes: int64(1.5 * stormCappedRU * resource.RUBytes)})
			}
			runStorm(t, db, stormLoad(t, db), seed, c.closeDB)
		})
	}
}

func runStorm(t *testing.T, db *DB, data *stormData, seed uint64, closeDB bool) {
	tally := &stormTally{count: map[string]int{}}
	// Close comes when the closeAt-th read starts, so that it meets reads
	// at every stage: starting, queued, reading, cancelled, done.
	closeAt := int64(stormReads / 4)
	var started atomic.Int64
	closed := make(chan error, 1)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range stormReads {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		end := stormEnd(rng.IntN(int(stormEnds)))
		if !closeDB && end == endNone {
			end = endCancel
		}
		base := context.Background()
		if db.opts.ResourceControl {
			base = WithResourceGroup(base, stormGroups[i%len(stormGroups)])
		}
		wg.Go(func() {
			<-gate
			if closeDB && started.Add(1) == closeAt {
				go func() { closed <- db.Close() }()
			}
			if i%4 == 3 {
				stormCoprocessor(t, db, base, rng, end, closeDB, tally)
			} else {
				stormScan(t, db, base, data, rng, end, closeDB, tally)
			}
		})
	}
	close(gate)

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stormGuard):
		t.Errorf("reads still running after %v: a cancelled read hangs", stormGuard)
		// Close ends every read (or hangs too, and goleak tells).
		assert.NoError(t, db.Close())
		<-done
	}
	if closeDB {
		assert.NoError(t, <-closed, "Close in the storm")
	}
	// A read returns when its task's Done is called; the pool files the
	// task with its group a moment later. Close waits for the pool's
	// workers, so after it every task is filed.
	assert.NoError(t, db.Close())
	assert.NoError(t, db.Close(), "idempotent")
	if !closeDB && db.opts.ResourceControl {
		capped := groupStats(t, db, "capped")
		assert.Positive(t, capped.Throttled, "the capped group's reads were never held: the storm missed held tasks")
		for _, g := range db.Stats().Groups {
			assert.Zero(t, g.Queued+g.Running+g.Held, "group %s keeps tasks after every read returned", g.Name)
		}
		t.Logf("capped group: held %v in all, %.1f RU", capped.Throttled, capped.RU)
	}
	t.Logf("%d reads: %v", stormReads, tally.count)
}

// stormScan runs one scan of the storm, from a random key, ascending or
// descending, and checks every row it returns: the keys in order with none
// missing, and the value of each.
func stormScan(t *testing.T, db *DB, base context.Context, data *stormData, rng *rand.Rand, end stormEnd, closeDB bool, tally *stormTally) {
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	reverse := rng.IntN(2) == 0
	from := rng.IntN(stormKeys)
	// want is the number of rows in the range.
	var it *Iterator
	var want int
	if reverse {
		it, want = db.Scan(ctx, nil, keyN(from), &ScanOptions{Reverse: true}), from
	} else {
		it, want = db.Scan(ctx, keyN(from), nil, nil), stormKeys-from
	}
	// A reader ends its scan within its first stormStopRows rows (which
	// bounds the storm's time), a timer within its first 2 ms.
	after := rng.IntN(min(want, stormStopRows) + 1)
	delay := time.Duration(rng.IntN(2000)) * time.Microsecond
	closedAsync := make(chan error, 1)
	switch end {
	case endCancelAsync:
		timer := time.AfterFunc(delay, cancel)
		defer timer.Stop()
	case endCloseAsync:
		time.AfterFunc(delay, func() { closedAsync <- it.Close() })
	}

	rows, stopped := 0, false
	for it.Next() {
		k := from + rows
		if reverse {
			k = from - 1 - rows
		}
		if k < 0 || k >= stormKeys || !bytes.Equal(it.Key(), data.keys[k]) || !bytes.Equal(it.Value(), data.rows[k]) {
			assert.Fail(t, "wrong row", "row %d of the scan from %s reverse=%v: %q = %x", rows, keyN(from), reverse, it.Key(), it.Value())
			break
		}
		rows++
		if rows == after && !stopped { // after 0 rows: not at all
			stopped = true
			switch end {
			case endCancel:
				cancel()
			case endClose:
				assert.NoError(t, it.Close())
			}
		}
	}
	err := it.Err()
	assert.NoError(t, it.Close())
	assert.NoError(t, it.Close(), "idempotent")
	if end == endCloseAsync {
		assert.NoError(t, <-closedAsync)
	}
	assert.LessOrEqual(t, rows, want)
	switch {
	case err == nil && (end == endClose || end == endCloseAsync):
		// A closed scan ends without error, wherever it was.
	case err == nil:
		assert.Equal(t, want, rows, "a scan that ends without error read its whole range")
	case closeDB && errors.Is(err, ErrClosed):
	default:
		assert.ErrorIs(t, err, context.Canceled, "%s", end)
	}
	tally.add(fmt.Sprintf("scan %s:", end), err)
}

// stormCoprocessor runs one coprocessor request of the storm: a sum over
// a random range, or the same range paged, ended between pages or while
// it runs.
func stormCoprocessor(t *testing.T, db *DB, base context.Context, rng *rand.Rand, end stormEnd, closeDB bool, tally *stormTally) {
	ctx, cancel := context.WithCancel(base)
	defer cancel()
	from := rng.IntN(stormKeys)
	to := from + rng.IntN(stormKeys-from+1)
	kr := coproc.KeyRange{Start: keyN(from), End: keyN(to)}
	paged := rng.IntN(2) == 0
	// A request is one call, which its reader cannot end in the middle: a
	// timer cancels it within 2 ms — but for a paged one that its reader
	// cancels between pages, and for endNone.
	how := "none"
	switch {
	case paged && (end == endCancel || end == endClose):
		how = "reader"
	case end != endNone:
		how = "timer"
		timer := time.AfterFunc(time.Duration(rng.IntN(2000))*time.Microsecond, cancel)
		defer timer.Stop()
	}
	var err error
	if !paged {
		var resp *coproc.Response
		resp, err = db.Coprocessor(ctx, &coproc.Request{
			Ranges: []coproc.KeyRange{kr},
			Aggs:   []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "v", As: "sum"}},
		})
		if err == nil && assert.Len(t, resp.Rows, 1) {
			n := int64(to - from)
			assert.EqualValues(t, n, resp.Rows[0]["n"])
			if n > 0 {
				assert.EqualValues(t, (int64(from)+int64(to)-1)*n/2, resp.Rows[0]["sum"])
			}
		}
	} else {
		// Paged: the reader ends it after some pages (cancel, close) or
		// lets it run.
		req := &coproc.Request{Ranges: []coproc.KeyRange{kr}, Columns: []string{"v"}, PagingSize: 100 + rng.IntN(2000)}
		pages := 1 + rng.IntN(5)
		next := int64(from)
		for page := 0; ; page++ {
			if page == pages && how == "reader" {
				cancel()
			}
			var resp *coproc.Response
			resp, err = db.Coprocessor(ctx, req)
			if err != nil {
				break
			}
			for _, r := range resp.Rows {
				if !assert.EqualValues(t, next, r["v"], "paged from %d", from) {
					return
				}
				next++
			}
			if resp.ResumeKey == nil {
				assert.EqualValues(t, to, next, "every row of the range, once")
				break
			}
			req = req.ResumeFrom(resp.ResumeKey)
		}
	}
	if err != nil && !(closeDB && errors.Is(err, ErrClosed)) {
		assert.ErrorIs(t, err, context.Canceled, "cancelled by %s", how)
	}
	kind := "sum"
	if paged {
		kind = "paged"
	}
	tally.add(fmt.Sprintf("coprocessor %s, cancelled by %s:", kind, how), err)
}

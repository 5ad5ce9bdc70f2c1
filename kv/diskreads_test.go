package kv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSlowReadRule(t *testing.T) {
	d := slowReadRule{slow: defaultSlowRead}
	for _, c := range []struct {
		name      string
		avg, took time.Duration
		want      time.Duration
		blocking  bool
	}{
		{name: "a new store's first page-cache read", avg: 0, took: 2 * time.Microsecond, want: 250 * time.Nanosecond},
		{name: "page cache stays fast", avg: 3 * time.Microsecond, took: 3 * time.Microsecond, want: 3 * time.Microsecond},
		{name: "one preempted read does not make the disk slow", avg: 3 * time.Microsecond, took: 10 * time.Millisecond, want: 10125 * time.Nanosecond},
		{name: "a slow read counts at most 60 µs", avg: 0, took: time.Millisecond, want: 7500 * time.Nanosecond},
		{name: "the fifth slow read in a row makes it slow", avg: 26 * time.Microsecond, took: time.Millisecond, want: 30250 * time.Nanosecond, blocking: true},
		{name: "a slow disk stays slow", avg: 60 * time.Microsecond, took: 200 * time.Microsecond, want: 60 * time.Microsecond, blocking: true},
		{name: "a page-cache hit on a slow disk leaves it slow", avg: 60 * time.Microsecond, took: 4 * time.Microsecond, want: 53 * time.Microsecond, blocking: true},
		{name: "below the threshold: fast", avg: 32 * time.Microsecond, took: 4 * time.Microsecond, want: 28500 * time.Nanosecond},
		{name: "at the threshold: slow", avg: defaultSlowRead, took: defaultSlowRead, want: defaultSlowRead, blocking: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := d.next(c.avg, c.took)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.blocking, d.blocking(got))
		})
	}
}

// within waits for ch, failing the test if it takes longer than a minute:
// a wait that long has hung, on any machine.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		require.FailNow(t, "hung: "+what)
		panic("unreachable")
	}
}

// TestDiskReads_BlockedGetLetsAQueuedReadRun: on a store of one worker,
// a Get blocked in a table read on a slow disk lets the next Get run
// meanwhile; the slow read is counted and told to the pool.
func TestDiskReads_BlockedGetLetsAQueuedReadRun(t *testing.T) {
	fs := newHoldFS() // multiget_disk_test.go
	// A slice of an hour puts the long-step monitor (20 slices) out of
	// reach: only the blocked read's word to the pool lets the second Get
	// run.
	db := openTest(t, "", &Options{FS: fs, Workers: 1, RowCacheSize: -1, spares: -1, NoWarm: true, TimeSlice: time.Hour})
	fs.reads.Store(db.reads) // the disk is slow, every read says
	for i := range 100 {
		require.NoError(t, db.Set(fmt.Appendf(nil, "t%03d", i), []byte("table")))
	}
	require.NoError(t, db.Flush())
	require.NoError(t, db.Set([]byte("mem"), []byte("memtable"))) // a Get of it reads no table

	fs.armed.Store(true)
	type result struct {
		v   []byte
		err error
	}
	first := make(chan result, 1)
	go func() {
		v, err := db.Get(context.Background(), []byte("t042"))
		first <- result{v, err}
	}()
	within(t, fs.entered, "the first Get's table read")
	st := db.Stats()
	require.NotNil(t, st.Pool)
	assert.EqualValues(t, 1, st.Pool.Blocked, "the read told the pool")

	second := make(chan result, 1)
	go func() {
		v, err := db.Get(context.Background(), []byte("mem"))
		second <- result{v, err}
	}()
	r := within(t, second, "the second Get, beside the blocked one")
	require.NoError(t, r.err)
	assert.Equal(t, "memtable", string(r.v))

	fs.armed.Store(false)
	close(fs.release)
	r = within(t, first, "the first Get, released")
	require.NoError(t, r.err)
	assert.Equal(t, "table", string(r.v))
	st = db.Stats()
	assert.Zero(t, st.Pool.Blocked)
	assert.Positive(t, st.Storage.SlowTableReads)
	assert.GreaterOrEqual(t, st.Storage.TableReads, st.Storage.SlowTableReads)
}

func TestOptions_MaxWorkers(t *testing.T) {
	_, err := Open("", &Options{InMemory: true, Workers: 4, MaxWorkers: 2})
	assert.ErrorContains(t, err, "kv: MaxWorkers 2 is below Workers 4")
	_, err = Open("", &Options{InMemory: true, MaxWorkers: -1})
	assert.ErrorContains(t, err, "kv: MaxWorkers -1 is negative")

	db := openTest(t, "", &Options{InMemory: true, Workers: 2})
	assert.Equal(t, 128, db.Options().MaxWorkers)
	assert.Equal(t, 128, db.Stats().Pool.MaxWorkers)
}

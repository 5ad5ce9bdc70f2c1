package kv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// blocker is a beforeRead hook that holds the Get of key "block" until
// release, and panics in the Get of key "panic".
type blocker struct {
	entered chan struct{} // receives once per blocked Get, when it is held
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocker) hook(key []byte) {
	switch string(key) {
	case "block":
		b.entered <- struct{}{}
		<-b.release
	case "panic":
		panic(errors.New("boom"))
	}
}

// openSaturated opens a one-worker pooled store whose only worker is held by
// a Get in the hook until the returned release is called (the test's
// cleanup calls it too). With a TimeSlice of a minute the pool's long-step
// hand-off (20 × TimeSlice) cannot lend the held step's place to an extra
// worker during the test.
func openSaturated(t *testing.T, o Options) (db *DB, release func()) {
	t.Helper()
	// No spare worker: it would step the point reads queued behind the
	// held one (readpool.Options.Spares).
	o.InMemory, o.Workers, o.TimeSlice, o.spares, o.NoWarm = true, 1, time.Minute, -1, true
	db, err := Open("", &o)
	require.NoError(t, err)
	b := newBlocker()
	db.hooks.beforeRead = b.hook
	held := make(chan error, 1)
	go func() {
		_, err := db.Get(context.Background(), []byte("block"))
		held <- err
	}()
	<-b.entered
	var released bool
	release = func() {
		if !released {
			released = true
			close(b.release)
			assert.ErrorIs(t, <-held, ErrNotFound, "the held Get ends normally")
		}
	}
	t.Cleanup(func() {
		release()
		require.NoError(t, db.Close())
	})
	return db, release
}

func TestErrors_Mapping(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	open := openTest(t, "", &Options{InMemory: true, Workers: 1})
	open.hooks.beforeRead = newBlocker().hook
	direct := openTest(t, "", &Options{InMemory: true, Scheduler: SchedulerDirect})
	closed, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	require.NoError(t, closed.Close())
	busy, _ := openSaturated(t, Options{MaxTasks: 1})
	// The held Get may run inline (it takes no place of MaxTasks) or on
	// the worker (it takes the one place): a queued scan fills the place
	// in the first case, and is refused in the second.
	filler := busy.Scan(ctx, nil, nil, nil)
	t.Cleanup(func() { _ = filler.Close() })

	getErr := func(db *DB, c context.Context, key string) func() error {
		return func() error { _, err := db.Get(c, []byte(key)); return err }
	}
	scanErr := func(db *DB, c context.Context, start, end string, o *ScanOptions) func() error {
		return func() error {
			var s, e []byte
			if start != "" {
				s = []byte(start)
			}
			if end != "" {
				e = []byte(end)
			}
			it := db.Scan(c, s, e, o)
			defer it.Close()
			for it.Next() {
			}
			return it.Err()
		}
	}
	var panicErr *readpool.PanicError
	for _, c := range []struct {
		name string
		err  func() error
		is   error  // errors.Is target, or nil
		as   any    // errors.As target, or nil
		text string // the message contains it
		bare bool   // the error is the sentinel itself
	}{
		{name: "get not found", err: getErr(open, ctx, "missing"), is: ErrNotFound, text: "kv: not found", bare: true},
		{name: "get empty key", err: getErr(open, ctx, ""), is: ErrEmptyKey, bare: true},
		{name: "get cancelled", err: getErr(open, cancelled, "k"), is: context.Canceled, text: `kv: get "k": context canceled`},
		{name: "get cancelled direct", err: getErr(direct, cancelled, "k"), is: context.Canceled, text: `kv: get "k": context canceled`},
		{name: "get panicked", err: getErr(open, ctx, "panic"), as: &panicErr, text: `kv: get "panic": read panicked: boom`},
		{name: "get busy", err: getErr(busy, ctx, "k"), is: ErrBusy, text: `kv: get "k": kv: busy`},
		{name: "get closed", err: getErr(closed, ctx, "k"), is: ErrClosed, text: `kv: get "k": kv: closed`},
		{name: "get closed direct", err: func() error {
			db, err := Open("", &Options{InMemory: true, Scheduler: SchedulerDirect})
			require.NoError(t, err)
			require.NoError(t, db.Close())
			_, err = db.Get(ctx, []byte("k"))
			return err
		}, is: ErrClosed, text: `kv: get "k": kv: closed`},
		{name: "get closed empty key", err: getErr(closed, ctx, ""), is: ErrClosed, bare: true},
		{name: "get invalid priority", err: getErr(open, WithPriority(ctx, 5), "k"), is: errInvalidPriority, text: `kv: get "k": kv: invalid priority 5`},
		{name: "get invalid priority direct", err: getErr(direct, WithPriority(ctx, 99), "k"), is: errInvalidPriority, text: `kv: get "k": kv: invalid priority 99`},
		{name: "scan invalid range", err: scanErr(open, ctx, "b", "a", nil), is: ErrInvalidRange, text: `kv: scan ["b", "a"): invalid range: start after end`},
		{name: "scan invalid range direct", err: scanErr(direct, ctx, "b", "a", nil), is: ErrInvalidRange, text: `kv: scan ["b", "a"): invalid range: start after end`},
		{name: "coprocessor invalid range", err: func() error {
			_, err := open.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{Start: []byte("b"), End: []byte("a")}}})
			assert.ErrorIs(t, err, coproc.ErrInvalidRange, "coproc's own sentinel too")
			return err
		}, is: ErrInvalidRange, text: `kv: coprocessor: invalid range: Ranges[0] ["b", "a"): start after end`},
		{name: "scan negative limit", err: scanErr(open, ctx, "", "", &ScanOptions{Limit: -1}), is: errNegativeLimit, text: `kv: scan [-inf, +inf): kv: negative ScanOptions.Limit`},
		{name: "scan cancelled", err: scanErr(open, cancelled, "a", "", nil), is: context.Canceled, text: `kv: scan ["a", +inf): context canceled`},
		{name: "scan cancelled direct", err: scanErr(direct, cancelled, "", "z", nil), is: context.Canceled, text: `kv: scan [-inf, "z"): context canceled`},
		{name: "scan invalid priority", err: scanErr(open, WithPriority(ctx, 3), "", "", nil), is: errInvalidPriority, text: "kv: invalid priority 3"},
		{name: "scan busy", err: scanErr(busy, ctx, "", "", nil), is: ErrBusy, text: "kv: scan [-inf, +inf): kv: busy"},
		{name: "scan closed", err: scanErr(closed, ctx, "a", "b", nil), is: ErrClosed, text: `kv: scan ["a", "b"): kv: closed`},
		{name: "set closed", err: func() error { return closed.Set([]byte("k"), nil) }, is: ErrClosed, bare: true},
		{name: "set closed empty key", err: func() error { return closed.Set(nil, nil) }, is: ErrClosed, bare: true},
		{name: "set empty key", err: func() error { return open.Set(nil, nil) }, is: ErrEmptyKey, bare: true},
		{name: "delete closed", err: func() error { return closed.Delete([]byte("k")) }, is: ErrClosed, bare: true},
		{name: "delete closed empty key", err: func() error { return closed.Delete(nil) }, is: ErrClosed, bare: true},
		{name: "apply closed empty batch", err: func() error { return closed.Apply(closed.NewBatch()) }, is: ErrClosed, bare: true},
		{name: "apply empty key", err: func() error {
			b := open.NewBatch()
			b.Delete(nil)
			return open.Apply(b)
		}, is: ErrEmptyKey, bare: true},
		{name: "apply nil", err: func() error { return open.Apply(nil) }, text: "kv: apply: nil batch"},
		{name: "flush closed", err: closed.Flush, is: ErrClosed, bare: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.err()
			require.Error(t, err)
			msg := err.Error()
			t.Log(strings.SplitN(msg, "\n", 2)[0])
			if c.is != nil {
				assert.ErrorIs(t, err, c.is)
			}
			if c.as != nil {
				assert.ErrorAs(t, err, c.as)
			}
			if c.bare {
				assert.Same(t, c.is, err, "a bare sentinel")
			}
			assert.True(t, strings.HasPrefix(msg, "kv: "), "%q starts with kv: ", msg)
			assert.NotContains(t, msg, "scan:")
			assert.NotContains(t, msg, "readpool:")
			assert.Contains(t, msg, c.text)
		})
	}
}

// TestErrors_PanicKeepsItsValue checks that a panic's error value stays
// reachable through the kv error and the pool's PanicError.
func TestErrors_PanicKeepsItsValue(t *testing.T) {
	boom := errors.New("boom")
	db := openTest(t, "", &Options{InMemory: true, Workers: 1})
	db.hooks.beforeRead = func([]byte) { panic(boom) }
	_, err := db.Get(context.Background(), []byte("k"))
	var pe *readpool.PanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, boom, pe.Value)
	assert.ErrorIs(t, err, boom)
	assert.NotContains(t, err.Error(), "readpool:")
}

func TestWithPriority_ZeroIsMedium(t *testing.T) {
	o, err := spawnOptions(WithPriority(context.Background(), 0), nil)
	require.NoError(t, err)
	assert.False(t, o.Fixed, "medium lets elapsed time pick the level, not the bottom one")
	for _, c := range []struct {
		p     resource.Priority
		fixed bool
		level int
	}{{resource.PriorityLow, true, 2}, {resource.PriorityMedium, false, 0}, {resource.PriorityHigh, true, 0}} {
		o, err := spawnOptions(WithPriority(context.Background(), c.p), nil)
		require.NoError(t, err)
		assert.Equal(t, c.fixed, o.Fixed, "%v", c.p)
		assert.Equal(t, c.level, o.Level, "%v", c.p)
	}
	for _, p := range []resource.Priority{-1, 2, 7, 9, 15, 17, 100} {
		_, err := spawnOptions(WithPriority(context.Background(), p), nil)
		assert.ErrorIs(t, err, errInvalidPriority, "%d", p)
	}

	db := openTest(t, "", &Options{InMemory: true, Workers: 1})
	load(t, db, 2000, func(int) []byte { return []byte("v") })
	before := db.Stats().Pool.Queue.Levels[2].Steps
	it := db.Scan(WithPriority(context.Background(), 0), nil, nil, nil)
	for it.Next() {
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	assert.Equal(t, before, db.Stats().Pool.Queue.Levels[2].Steps, "a priority of 0 does not run on the bottom level")
	_, err = db.Get(WithPriority(context.Background(), 0), keyN(1))
	assert.NoError(t, err)
}

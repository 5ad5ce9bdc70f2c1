package kv

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/readpool"
)

// Get returns a copy of the value stored under key, which the caller owns,
// or ErrNotFound. It runs as a one-step read-pool task; when a worker is
// idle and nothing waits, that step runs on the caller's goroutine. A
// row-cache hit needs no worker at all: it is answered on the caller's
// goroutine, counted in the pool's figures and charged to its group like a
// task (unless Options.RowCacheHitsInPool, or its group is out of tokens).
//
// A Get whose context ends while it waits in the queue returns the
// context's error as soon as the pool ends its task: the only wait here is
// for the task's Done, which the pool calls however the task ends.
func (db *DB) Get(ctx context.Context, key []byte) ([]byte, error) {
	return db.get(ctx, db, key)
}

// get is a Get of key from v: db itself, one of its snapshots or a Txn's.
func (db *DB) get(ctx context.Context, v view, key []byte) ([]byte, error) {
	val, _, err := db.getWithExpiry(ctx, v, key)
	return val, err
}

// getExpiry is ExpiresAt's read: a Get of key from v, keeping the expiry.
func (db *DB) getExpiry(ctx context.Context, v view, key []byte) (int64, error) {
	_, exp, err := db.getWithExpiry(ctx, v, key)
	return exp, err
}

// getWithExpiry is a Get of key from v that returns the value's expiry (0:
// none) beside it.
func (db *DB) getWithExpiry(ctx context.Context, v view, key []byte) ([]byte, int64, error) {
	if len(key) == 0 {
		return nil, 0, v.closedOr(ErrEmptyKey)
	}
	o, err := db.readOptions(ctx, key, true)
	if err != nil {
		return nil, 0, v.closedOr(getError(key, err))
	}
	if db.pool == nil {
		return db.getDirect(ctx, v, key)
	}
	t := getTasks.Get().(*getTask)
	t.db, t.v, t.key = db, v, key
	if db.cache != nil && !db.opts.RowCacheHitsInPool {
		t.use = v.cacheFor(key)
	}
	if t.use != noCache && ctx.Err() == nil && db.enter() == nil {
		// Under mu, shared, as a call into Pebble is: Close closes the
		// cache, and waits for the lookup first. serve captures t, not
		// locals of Get, so it costs no allocation.
		hit := db.pool.Bypass(o, t.serveFromCache)
		db.mu.RUnlock()
		if hit {
			val, exp := t.val, t.exp
			t.reset()
			return val, exp, nil
		}
	}
	return t.run(ctx, o)
}

// run spawns t, a Get, in the pool as a point read, waits for it and
// recycles it.
func (t *getTask) run(ctx context.Context, o readpool.SpawnOptions) ([]byte, int64, error) {
	o.Inline, o.Short = true, true
	err := t.db.pool.Go(ctx, t, o)
	if err == nil {
		t.waiting.Store(true)
		<-t.done
		err = t.err
	}
	key, val, exp := t.key, t.val, t.exp
	t.reset()
	if err != nil {
		return nil, 0, getError(key, err)
	}
	return val, exp, nil
}

// getDirect is a Get without a pool, on the caller's goroutine.
func (db *DB) getDirect(ctx context.Context, v view, key []byte) ([]byte, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, v.closedOr(getError(key, err))
	}
	if err := db.enter(); err != nil {
		return nil, 0, getError(key, err)
	}
	defer db.mu.RUnlock()
	val, exp, err := v.read(key)
	return val, exp, getError(key, err)
}

// read is view.read for the live store: it looks key up in the row cache,
// then in Pebble. Its errors are Pebble's, or ErrNotFound; the caller
// words them.
func (db *DB) read(key []byte) ([]byte, int64, error) {
	if h := db.hooks.beforeRead; h != nil {
		h(key)
	}
	var gen cacheStamp
	if db.cache != nil {
		val, exp, ok, g := db.cache.get(key)
		if ok {
			return judged(db, val, exp)
		}
		gen = g
	}
	return db.readStorage(key, gen)
}

// readStorage reads key from Pebble and caches the value unless a write to
// its stripe has completed since gen, the stripe's generation when the
// cache was looked at.
func (db *DB) readStorage(key []byte, gen cacheStamp) ([]byte, int64, error) {
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, err
	}
	// Pebble's value is valid only until closer is closed.
	val, exp, err := db.copyValue(v)
	_ = closer.Close()
	if err != nil {
		return nil, 0, err
	}
	val, exp, err = judged(db, val, exp)
	if err == nil && db.cache != nil {
		db.cache.put(key, val, exp, gen)
	}
	return val, exp, err
}

// copyValue decodes v, a value as Pebble holds it, into a copy of the
// caller's value (not nil when empty) and its expiry.
func (db *DB) copyValue(v []byte) ([]byte, int64, error) {
	val, exp, err := db.decode(v)
	if err != nil {
		return nil, 0, err
	}
	return append(make([]byte, 0, len(val)), val...), exp, nil
}

// getTask is a Get as a read-pool task. Tasks and their done channels are
// recycled, so a Get allocates only its result.
type getTask struct {
	db   *DB
	v    view // what the Get reads (DB.get)
	key  []byte
	val  []byte
	exp  int64 // val's expiry (0: none)
	err  error
	done chan struct{}
	// waiting is set once the caller is about to block on done: a worker
	// that completes the task then hands its P to the caller at once
	// (readpool.Awaited).
	waiting atomic.Bool
	// use is how the fast path may use the row cache (v.cacheFor).
	use cacheUse
	// missed says the caller looked in the row cache already (the fast
	// path) and counted a miss, at stripe generation gen: the step goes
	// straight to Pebble.
	missed bool
	gen    cacheStamp
}

// serveFromCache is Get's fast path, run by Pool.Bypass: a hit is the
// answer; the live store's miss is remembered so the task does not look
// again.
func (t *getTask) serveFromCache() (int64, bool) {
	if h := t.db.hooks.beforeHit; h != nil {
		h(t.key)
	}
	val, exp, ok, gen := t.db.cache.lookup(t.key)
	if ok && (t.use == ownCache || t.v.cacheFor(t.key) == cacheIfUnchanged) {
		// An expired value is not served: the step finds it expired in
		// Pebble too, until the sweeper deletes it.
		if val, exp, err := judged(t.v, val, exp); err == nil {
			t.val, t.exp = val, exp
			return int64(len(val)), true
		}
	}
	if t.use == ownCache {
		t.db.cache.misses.Add(1)
		t.missed, t.gen = true, gen
	}
	return 0, false
}

// reset readies t for its next Get and recycles it.
func (t *getTask) reset() {
	t.db, t.v, t.key, t.val, t.exp, t.err = nil, nil, nil, nil, 0, nil
	t.use, t.missed, t.gen = noCache, false, cacheStamp{}
	t.waiting.Store(false)
	getTasks.Put(t)
}

var getTasks = sync.Pool{New: func() any { return &getTask{done: make(chan struct{}, 1)} }}

func (t *getTask) Step(*readpool.StepContext) readpool.Status {
	if !t.missed {
		t.val, t.exp, t.err = t.v.read(t.key)
		return readpool.Ready
	}
	// The live store's, looked for in the row cache already.
	if h := t.db.hooks.beforeRead; h != nil {
		h(t.key)
	}
	t.val, t.exp, t.err = t.db.readStorage(t.key, t.gen)
	return readpool.Ready
}

// Waiting implements readpool.Awaited.
func (t *getTask) Waiting() bool { return t.waiting.Load() }

func (t *getTask) Done(err error) {
	if err != nil {
		t.err = err
	}
	t.done <- struct{}{}
}

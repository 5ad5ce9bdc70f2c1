package kv

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/readpool"
)

// Get returns a copy of the value stored under key, which the caller owns,
// or ErrNotFound. It runs as a one-step read-pool task; when a worker is
// idle and nothing waits, that step runs on the caller's goroutine.
//
// A Get whose context ends while it waits in the queue returns the
// context's error as soon as the pool ends its task: the only wait here is
// for the task's Done, which the pool calls however the task ends.
func (db *DB) Get(ctx context.Context, key []byte) ([]byte, error) {
	if len(key) == 0 {
		return nil, db.closedOr(ErrEmptyKey)
	}
	o, err := spawnOptions(ctx, db.groupsIfControlled())
	if err != nil {
		return nil, db.closedOr(getError(key, err))
	}
	if db.pool == nil {
		return db.getDirect(ctx, key)
	}
	t := getTasks.Get().(*getTask)
	t.db, t.key = db, key
	o.Inline = true
	err = db.pool.Go(ctx, t, o)
	if err == nil {
		<-t.done
		err = t.err
	}
	val := t.val
	*t = getTask{done: t.done}
	getTasks.Put(t)
	if err != nil {
		return nil, getError(key, err)
	}
	return val, nil
}

func (db *DB) getDirect(ctx context.Context, key []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, db.closedOr(getError(key, err))
	}
	if err := db.enter(); err != nil {
		return nil, getError(key, err)
	}
	defer db.mu.RUnlock()
	val, err := db.read(key)
	return val, getError(key, err)
}

// read looks key up in the row cache, then in Pebble. Its errors are
// Pebble's, or ErrNotFound; the caller words them.
func (db *DB) read(key []byte) ([]byte, error) {
	if h := db.hooks.beforeRead; h != nil {
		h(key)
	}
	var gen uint64
	if db.cache != nil {
		val, ok, g := db.cache.get(key)
		if ok {
			return val, nil
		}
		gen = g
	}
	v, closer, err := db.pdb.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	// Pebble's value is valid only until closer is closed.
	val := bytes.Clone(v)
	if val == nil {
		val = []byte{}
	}
	_ = closer.Close()
	if db.cache != nil {
		db.cache.put(key, val, gen)
	}
	return val, nil
}

// getTask is a Get as a read-pool task. Tasks and their done channels are
// recycled, so a Get allocates only its result.
type getTask struct {
	db   *DB
	key  []byte
	val  []byte
	err  error
	done chan struct{}
}

var getTasks = sync.Pool{New: func() any { return &getTask{done: make(chan struct{}, 1)} }}

func (t *getTask) Step(*readpool.StepContext) readpool.Status {
	t.val, t.err = t.db.read(t.key)
	return readpool.Ready
}

func (t *getTask) Done(err error) {
	if err != nil {
		t.err = err
	}
	t.done <- struct{}{}
}

package kv

import (
	"context"
	"fmt"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/scan"
)

// Coprocessor runs req — its filter, projection, aggregates, top-N and
// paging pushed into the scan — as one read-pool task over one snapshot of
// the store, and returns the answer. It is scheduled and charged like any
// read (its group, its priority, its deadline also while queued); a
// cancelled or closed store ends it at its next batch. As with Get, when a
// worker is idle and nothing waits its first step — a small request whole
// — runs on the caller's goroutine. A malformed request is an error that
// names the field, never a panic.
func (db *DB) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	return db.coprocessor(ctx, db, req)
}

// coprocessor runs req over v: db itself, one of its snapshots or a
// Txn's.
func (db *DB) coprocessor(ctx context.Context, v view, req *coproc.Request) (*coproc.Response, error) {
	if req == nil {
		return nil, v.closedOr(fmt.Errorf("kv: coprocessor: %w: nil request", coproc.ErrInvalidRequest))
	}
	var origin []byte
	if len(req.Ranges) > 0 {
		origin = req.Ranges[0].Start
	}
	o, err := db.readOptions(ctx, origin, false)
	if err != nil {
		return nil, v.closedOr(copError(err))
	}
	if err := ctx.Err(); err != nil {
		return nil, v.closedOr(copError(err))
	}
	if err := db.enter(); err != nil {
		return nil, copError(err)
	}
	// The read lock is held until the snapshot belongs to the task and the
	// task to the pool (or, direct, until it has run): Close cannot close
	// Pebble under it.
	r, release := v.reader(), func() {}
	if !v.fixed() {
		// The task opens a cursor per range, at different moments: on the
		// live store they all read one Pebble snapshot, taken now and let
		// go when the task ends (Close waits for that before it closes
		// Pebble).
		snap := db.pdb.NewSnapshot()
		r, release = snap, func() { _ = snap.Close() }
	}
	now := v.at() // one time for all the request's ranges
	open := func(spec scan.Spec) (*scan.Cursor, error) { return scan.NewCursor(r, db.judging(v, now, spec)) }
	t, err := coproc.NewTask(ctx, req, open, release)
	if err != nil {
		release()
		db.mu.RUnlock()
		return nil, copError(err)
	}
	if db.pool == nil {
		t.Run()
		db.mu.RUnlock()
		resp, err := t.Wait()
		return resp, copError(err)
	}
	// Its caller only waits for the answer, as a Get's does: with a
	// worker idle and nothing queued the first step — a small request
	// whole — runs on the caller's goroutine (bounded by the time slice,
	// so holding mu across it is cheap).
	o.Inline = true
	h, err := db.pool.Spawn(ctx, t, o)
	if err != nil {
		release() // the pool did not take the task: its Done will not run
	}
	db.mu.RUnlock()
	if err != nil {
		return nil, copError(err)
	}
	resp, err := t.Wait()
	if err != nil {
		return nil, copError(err)
	}
	ts := h.Stats()
	resp.Stats.Steps, resp.Stats.Yields = ts.Steps, ts.Yields
	resp.Stats.WaitTime, resp.Stats.ExecTime = ts.WaitTime, ts.ExecTime
	return resp, nil
}

// CoprocessorRaw is Coprocessor with the request and the response as
// msgpack (coproc.Decode, coproc.EncodeResponse).
func (db *DB) CoprocessorRaw(ctx context.Context, req []byte) ([]byte, error) {
	r, err := coproc.Decode(req)
	if err != nil {
		return nil, db.closedOr(copError(err))
	}
	resp, err := db.Coprocessor(ctx, r)
	if err != nil {
		return nil, err
	}
	b, err := coproc.EncodeResponse(resp)
	if err != nil {
		return nil, copError(err)
	}
	return b, nil
}

// copError is the error of a coprocessor request.
func copError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("kv: coprocessor: %w", storeErr(err))
}

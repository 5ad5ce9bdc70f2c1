package tikv

import (
	"context"
	"fmt"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/scan"
)

// Coprocessor runs req in the client's read pool — TiKV's own coprocessor
// speaks TiDB's DAG format, not coopkv's requests, so the pushdown happens
// here, in this process, not on the TiKV servers. It reads one snapshot
// (a timestamp), each range split at region boundaries and up to
// Options.CoprocessorConcurrency regions read ahead at once, consumed in
// key order so the rows are a sequential read's; it yields between
// batches as the embedded store's does, is scheduled and charged
// by its group and priority in the pool, and pages and resumes
// (coproc.Request.ResumeFrom) exactly as embedded: the same coproc.Task
// runs it.
func (s *Store) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	return reader{s: s}.Coprocessor(ctx, req)
}

// Coprocessor runs req over the reader's view.
func (r reader) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	ts, err := r.begin(ctx)
	if err != nil {
		return nil, copError(err)
	}
	defer r.s.leave()
	if req == nil {
		return nil, fmt.Errorf("tikv: coprocessor: %w: nil request", coproc.ErrInvalidRequest)
	}
	rq, err := requestOf(ctx)
	if err != nil {
		return nil, copError(err)
	}
	release := func() {}
	if r.ts == 0 { // the store's own view: hold it while the task reads
		release = r.s.held.add(ts)
	}
	view := reader{s: r.s, ts: ts, open: r.open}
	par := r.s.opts.CoprocessorConcurrency
	open := func(spec scan.Spec) (*scan.Cursor, error) {
		if par > 1 {
			w := &regionRows{r: view, ctx: ctx, start: spec.Start, end: spec.End, reverse: spec.Reverse, keysOnly: spec.KeysOnly, limit: spec.Limit, par: par}
			return scan.NewCursorOver(w, spec)
		}
		w := &rows{r: view, ctx: ctx, start: spec.Start, end: spec.End, reverse: spec.Reverse, keysOnly: spec.KeysOnly, limit: spec.Limit}
		return scan.NewCursorOver(w, spec)
	}
	t, err := coproc.NewTask(ctx, req, open, release)
	if err != nil {
		release()
		return nil, copError(err)
	}
	g := r.s.groups.Resolve(rq.group)
	o := readpool.SpawnOptions{Group: g.Name(), Tag: g, TaskID: rq.taskID, Inline: true, MaxQueueWait: kv.MaxQueueWaitFrom(ctx)}
	if rq.explicit {
		o.Priority = uint64(rq.priority)
	}
	h, err := r.s.pool.Spawn(ctx, t, o)
	if err != nil {
		release() // the pool did not take the task: its Done will not run
		return nil, copError(err)
	}
	resp, err := t.Wait()
	if err != nil {
		return nil, copError(err)
	}
	st := h.Stats() // the pool's share of the stats: how the task waited and ran
	resp.Stats.Steps, resp.Stats.Yields, resp.Stats.WaitTime, resp.Stats.ExecTime = st.Steps, st.Yields, st.WaitTime, st.ExecTime
	return resp, nil
}

// copError is the error of a coprocessor request.
func copError(err error) error {
	return fmt.Errorf("tikv: coprocessor: %w", storeErr(err))
}

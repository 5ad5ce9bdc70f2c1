package readpool

import (
	"time"
	"unsafe"
)

// Bypass serves a read that needs no worker — a row-cache hit — on the
// caller's goroutine, as a task accepted and finished at once: no handle,
// no queue, no hand-off. serve does the read and reports the bytes it
// returned and whether it could; false (a miss) counts nothing, and the
// caller spawns a task as usual.
//
// Bypass returns false without calling serve when the pool is closed or
// the queue would not let the task start at once (Queue.MayInline: under
// resource control, a limited group out of tokens, whose reads must wait
// like any other; under the MLFQ, a task with an id, whose time only the
// queue may account; under either, a demoted read, which runs only in a
// cooled slot). Its entry is the one Spawn would queue (SpawnOptions.entry),
// so the queue judges a hit as it would judge the task. A served read counts as spawned and completed (and
// in Stats.Bypassed), and the Accountant is charged for it as for a
// one-step task, so a group's RU include its cache hits.
func (p *Pool) Bypass(o SpawnOptions, serve func() (bytes int64, ok bool)) bool {
	if p.closedFlag.Load() {
		return false
	}
	e := p.entries.Get().(*Entry)
	*e = o.entry()
	defer func() {
		*e = Entry{}
		p.entries.Put(e)
	}()
	if !p.q.MayInline(e) {
		return false
	}
	a := p.opts.Accountant
	var start time.Duration
	if a != nil {
		start = p.now()
	}
	n, ok := serve()
	if !ok {
		return false
	}
	// Striped by the entry's address: sync.Pool keeps entries per P, so
	// callers on different Ps mostly add to different stripes.
	p.bypassed.Add(uint64(uintptr(unsafe.Pointer(e))>>8), 1)
	if a != nil {
		a.Charge(e, Usage{Exec: p.now() - start, Bytes: n, First: true})
	}
	return true
}

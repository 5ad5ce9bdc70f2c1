//go:build invariants || race

package readpool

import (
	"fmt"
	"sync/atomic"
)

// Self-checks of the pool's bookkeeping. They run under `go test -race`
// (and with -tags invariants) and cost nothing in production builds
// (invariants_off.go), as Pebble's internal/invariants does.

// invariants is true when the self-checks are compiled in.
const invariants = true

// poolInvariants counts accepted tasks whose Done has not been called.
type poolInvariants struct {
	live atomic.Int64
}

func (i *poolInvariants) accept() { i.live.Add(1) }

// checkOnce fails when a task is completed twice, and counts its end.
func checkOnce(h *Handle) {
	if h.ended.Swap(true) {
		panic("readpool: invariant: task completed twice")
	}
	h.p.inv.live.Add(-1)
}

// checkLocked checks the counters the pool keeps under its lock.
func (p *Pool) checkLocked() {
	if p.running < 0 || p.waitingN < 0 || p.extras.running < 0 {
		panic(fmt.Sprintf("readpool: invariant: negative counter: running %d, waiting %d, extras %d", p.running, p.waitingN, p.extras.running))
	}
	if int64(p.q.Len()) != p.queued.Load() {
		panic("readpool: invariant: queued does not mirror the queue")
	}
}

// checkDrained runs at the end of Close: every accepted task has ended.
func (i *poolInvariants) checkDrained(p *Pool) {
	if n := i.live.Load(); n != 0 {
		panic(fmt.Sprintf("readpool: invariant: %d tasks not completed after Close", n))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running != 0 || p.waitingN != 0 || p.q.Len() != 0 {
		panic(fmt.Sprintf("readpool: invariant: after Close: running %d, waiting %d, queued %d", p.running, p.waitingN, p.q.Len()))
	}
	p.checkLocked()
}

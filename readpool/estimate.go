package readpool

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/internal/ewma"
)

// Estimated waits, for callers that would rather fail fast than wait
// (SpawnOptions.MaxQueueWait): TiKV's early busy reply (RFC 0105) compares
// the queue's length times the moving average of a time slice with the
// caller's busy threshold; the pool does the same with what its queue says
// is ahead of the task and what its workers' steps take now.

// QueuePosition is an optional Queue capability: how many queued entries
// would step before e, were it pushed now. Under the pool's lock. A queue
// without it is taken to put e behind all it holds (Len).
type QueuePosition interface {
	Ahead(e *Entry) int
}

// BusyError is the ErrBusy of a task refused because its estimated wait
// exceeded its SpawnOptions.MaxQueueWait.
type BusyError struct {
	// EstimatedWait is the wait the pool estimated for the task's first
	// step.
	EstimatedWait time.Duration
}

// Error implements error.
func (e *BusyError) Error() string {
	return fmt.Sprintf("%v: estimated wait %v", ErrBusy, e.EstimatedWait)
}

// Unwrap returns ErrBusy.
func (e *BusyError) Unwrap() error { return ErrBusy }

// waitEstimate is how long a task waits for its first step when ahead
// entries would step before it, free of the workers are idle, and the busy
// ones' steps take step on average. The task starts at once while a worker
// is free for it; otherwise at the (ahead−free+1)th time a busy worker
// finishes a step: with the steps in progress half done on average, that is
// (n/workers − ½) steps, and never less than the first of workers
// uniformly spread ends (step/(workers+1)).
func waitEstimate(ahead, free, workers int, step time.Duration) time.Duration {
	if ahead < free || workers <= 0 {
		return 0
	}
	n := time.Duration(ahead - free + 1)
	return max(n*step/time.Duration(workers)-step/2, step/time.Duration(workers+1))
}

// estimateWait is how long a task spawned now with o would wait for its
// first step, as SpawnOptions.MaxQueueWait compares it.
func (p *Pool) estimateWait(o SpawnOptions) time.Duration {
	e := o.entry()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.estimateLocked(&e)
}

// estimateLocked is estimateWait of the entry e about to be pushed.
func (p *Pool) estimateLocked(e *Entry) time.Duration {
	ahead := p.q.Len()
	if qp, ok := p.opts.Queue.(QueuePosition); ok {
		ahead = qp.Ahead(e)
	}
	free := p.slots.freeLocked()
	if e.Short && p.urgent != nil {
		free += len(p.spares.parked) // urgent work wakes a spare
	}
	// Never less than the recent first steps waited: a free worker still
	// has to be woken, and a queue that looks empty may fill first.
	return max(waitEstimate(ahead, free, p.opts.Workers, p.average(func(s *slot) *ewma.Duration { return &s.avg }, p.opts.TimeSlice)),
		p.average(func(s *slot) *ewma.Duration { return &s.firstWait }, 0))
}

// average is the workers' slots' moving average that of picks (their own
// slots' and, for steps run inline, their lent slots'), def when none has
// measured anything yet.
func (p *Pool) average(of func(*slot) *ewma.Duration, def time.Duration) time.Duration {
	var sum, n int64
	for _, w := range p.slots.workers {
		for _, s := range []*slot{&w.own, &w.lent} {
			if v := of(s).Load(); v > 0 {
				sum += int64(v)
				n++
			}
		}
	}
	if n == 0 {
		return def
	}
	return time.Duration(sum / n)
}

// waitStats counts how the estimate served the tasks that had a
// MaxQueueWait.
type waitStats struct {
	refused, started, withinLimit, withinEstimate atomic.Int64
}

// start counts a task with limit maxWait whose first step began after
// waiting wait, estimated at spawn as estimate (0 for an inline step).
func (s *waitStats) start(wait, maxWait, estimate time.Duration) {
	s.started.Add(1)
	if wait <= maxWait {
		s.withinLimit.Add(1)
	}
	if wait <= estimate {
		s.withinEstimate.Add(1)
	}
}

// WaitStats is how estimated waits served the tasks spawned with a
// MaxQueueWait.
type WaitStats struct {
	// Refused counts tasks refused because their estimate exceeded their
	// limit (counted apart from RejectedBusy, which counts a full pool).
	Refused int64 `json:"refused"`
	// Started counts admitted tasks that have taken their first step;
	// WithinLimit those of them that waited no longer than their limit,
	// WithinEstimate those that waited no longer than their estimate.
	Started        int64 `json:"started"`
	WithinLimit    int64 `json:"within_limit"`
	WithinEstimate int64 `json:"within_estimate"`
}

func (s *waitStats) snapshot() WaitStats {
	return WaitStats{Refused: s.refused.Load(), Started: s.started.Load(), WithinLimit: s.withinLimit.Load(), WithinEstimate: s.withinEstimate.Load()}
}

package readpool

import (
	"time"

	"github.com/coopkv/coopkv/readpool/internal/hist"
)

// Stats is a JSON-encodable snapshot of a pool.
type Stats struct {
	Workers int `json:"workers"`
	Busy    int `json:"busy"`   // slots running a step (inline steps included)
	Parked  int `json:"parked"` // workers asleep with a free slot
	// Extra counts the temporary workers awake beside the workers, standing
	// in for steps stuck on the CPU or blocked off it (MaxWorkers bounds
	// them all, see Options.MaxWorkers).
	Extra      int `json:"extra"`
	MaxWorkers int `json:"max_workers"`
	// Blocked counts the goroutines blocked off the CPU now, between
	// Pool.EnterBlocking and ExitBlocking: steps waiting on a slow disk
	// (and Pebble's background reads, which the pool cannot tell apart).
	Blocked int64 `json:"blocked"`
	// Slack is how many steps beyond the blocked reads the CPU controller
	// lets run now, while reads block and the CPU has room.
	Slack int64 `json:"slack"`
	// Spares are the spare workers, which step urgent work while every
	// worker is busy (Options.Spares).
	Spares int `json:"spares"`
	// SpareSteps counts the steps the spares ran (in Steps too).
	SpareSteps int64 `json:"spare_steps"`

	Queued  int        `json:"queued"`  // ready to run
	Held    int        `json:"held"`    // held back by the queue until a later time
	Running int        `json:"running"` // taken from the queue, stepping
	Pending int        `json:"pending"` // tasks waiting for a wake
	Queue   QueueStats `json:"queue"`

	Spawned   int64 `json:"spawned"`
	Completed int64 `json:"completed"`
	Cancelled int64 `json:"cancelled"`
	// Dropped counts tasks ended while they waited for a worker (queued,
	// held, or just spawned): context done or cancelled first.
	Dropped      int64 `json:"dropped"`
	Panicked     int64 `json:"panicked"`
	RejectedBusy int64 `json:"rejected_busy"`
	// Waits is how estimated waits served tasks with a MaxQueueWait.
	Waits  WaitStats `json:"waits"`
	Inline int64     `json:"inline"` // first steps run on the caller's goroutine
	// Bypassed counts reads served on the caller's goroutine without a
	// task (Pool.Bypass: row-cache hits); they are in Spawned and
	// Completed too.
	Bypassed int64 `json:"bypassed"`
	// SteppedHere counts steps of waiting tasks run on the goroutine that
	// awaited them rather than on a worker (Waker.StepHere: a scan's
	// consumer filling its own next batches).
	SteppedHere int64 `json:"stepped_here"`

	Steps     int64 `json:"steps"`
	Yields    int64 `json:"yields"`
	Pendings  int64 `json:"pendings"`
	Wakes     int64 `json:"wakes"`
	LongSteps int64 `json:"long_steps"`
	Preempted int64 `json:"preempted"` // steps cut short at a unit boundary for more urgent work (the queue's hint)
	// Batched counts the tasks workers took into their local queues
	// behind the one they popped, and Stolen those idle workers took from
	// another's local queue (Batcher).
	Batched int64 `json:"batched"`
	Stolen  int64 `json:"stolen"`
	// CallerHandoffs counts the times a worker gave its P to the caller
	// its step's completion readied (Awaited).
	CallerHandoffs int64 `json:"caller_handoffs"`
	// Goscheds counts the times a step or a worker between steps gave its
	// P back to Go's scheduler after keeping it for a quarter of a time
	// slice (at most 100 µs; a quarter of that for a demoted task), so
	// that the program's goroutines are not left waiting for Go's 10 ms
	// preemption.
	Goscheds int64 `json:"goscheds"`

	QueueWait DurationSummary `json:"queue_wait"`
	StepTime  DurationSummary `json:"step_time"`
}

// DurationSummary is a digest of a latency distribution since the pool
// started. Buckets let a reader compute quantiles over any window (the
// difference of two snapshots) and export a real histogram.
type DurationSummary struct {
	Count uint64        `json:"count"`
	Sum   time.Duration `json:"sum_ns"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
	// Buckets are cumulative, at powers of two of nanoseconds from 2^10
	// (≈1 µs) to 2^34 (≈17 s); observations at or past the last are in
	// Count only.
	Buckets []Bucket `json:"buckets"`
}

// Bucket is one cumulative histogram bucket.
type Bucket struct {
	Le    time.Duration `json:"le_ns"` // upper bound (exclusive)
	Count uint64        `json:"count"` // observations below Le
}

func summary(h *hist.Histogram) DurationSummary {
	s := h.Summary()
	b := make([]Bucket, len(s.Below))
	for i, n := range s.Below {
		b[i] = Bucket{Le: hist.PowerOfTwoBounds[i], Count: n}
	}
	return DurationSummary{Count: s.Count, Sum: s.Sum, P50: s.P50, P99: s.P99, Max: s.Max, Buckets: b}
}

// Stats returns a snapshot. Counters are read one by one, so a snapshot
// taken under load may be off by the tasks that moved while it was taken.
func (p *Pool) Stats() Stats {
	var agg workerStats
	s := Stats{Workers: len(p.slots.workers), MaxWorkers: p.opts.MaxWorkers, Blocked: p.blocked.Load(), Slack: p.slack.Load()}
	for _, w := range p.slots.workers {
		for _, sl := range []*slot{&w.own, &w.lent} {
			agg.add(&sl.stats)
			if sl.stepStart.Load() != 0 {
				s.Busy++
			}
		}
	}
	for _, w := range p.spares.workers {
		s.SpareSteps += w.own.stats.steps.Load()
		agg.add(&w.own.stats)
		if w.own.stepStart.Load() != 0 {
			s.Busy++
		}
	}
	s.Spares = len(p.spares.workers)
	p.mu.Lock()
	agg.add(&p.retired)
	for w := range p.extras.all {
		for _, sl := range []*slot{&w.own, &w.lent} {
			agg.add(&sl.stats)
			if sl.stepStart.Load() != 0 {
				s.Busy++
			}
		}
	}
	s.Parked = len(p.slots.parked)
	s.Extra = p.extras.running
	s.Queued = p.q.Len()
	s.Pending = p.waitingN
	s.Running = p.running
	s.Queue = p.q.Stats()
	s.Held, _ = p.q.Held()
	s.Spawned = p.spawned
	p.mu.Unlock()
	s.Inline = agg.inline.Load()
	s.Bypassed = p.bypassed.Load()
	s.SteppedHere = agg.here.Load()
	s.Spawned += s.Inline + s.Bypassed

	s.Completed = agg.completed.Load() + p.completedOff.Load() + s.Bypassed
	s.Cancelled = p.cancelled.Load()
	s.Dropped = p.dropped.Load()
	s.Panicked = p.panicked.Load()
	s.RejectedBusy = p.rejected.Load()
	s.Waits = p.waits.snapshot()
	s.Steps = agg.steps.Load()
	s.Yields = agg.yields.Load()
	s.Pendings = agg.pendings.Load()
	s.Wakes = p.wakes.Load()
	s.LongSteps = p.mon.longSteps.Load()
	s.Preempted = p.preempted.Load()
	s.CallerHandoffs = agg.handoffs.Load()
	s.Goscheds = agg.goscheds.Load()
	s.Batched = agg.batched.Load()
	s.Stolen = agg.stolen.Load()
	s.QueueWait = summary(&agg.wait)
	s.StepTime = summary(&agg.step)
	return s
}

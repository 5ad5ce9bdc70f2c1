package readpool

import "time"

// MLFQOptions tunes an MLFQ. Zero fields take the defaults.
type MLFQOptions struct {
	// Thresholds are the accumulated step times at which a task id moves
	// down a level; default 5 ms and 100 ms (as TiKV's read pool).
	Thresholds [2]time.Duration
	// Shares are the target fractions of worker time for levels 0, 1, 2
	// while all have work; default 0.80, 0.16, 0.04. They are normalised.
	Shares [3]float64
	// PruneEvery is how often the per-id time map drops a generation:
	// an id unseen for between one and two periods is forgotten.
	// Default 10 s (as YATP).
	PruneEvery time.Duration
}

// DefaultLevelThresholds is MLFQOptions.Thresholds' default: the step
// time after which a task counts as level 1, then level 2 (as TiKV's read
// pool). The resource scheduler's levels within a group are the same.
func DefaultLevelThresholds() [2]time.Duration {
	return [2]time.Duration{5 * time.Millisecond, 100 * time.Millisecond}
}

// LowestLevel is the MLFQ's last level: SpawnOptions{Fixed: true, Level:
// LowestLevel} is background work, run in the level's share of the pool
// behind every read of the levels above.
const LowestLevel = 2

// LevelFor is the level of a task that has run for elapsed, by thresholds.
func LevelFor(elapsed time.Duration, thresholds [2]time.Duration) int {
	switch {
	case elapsed < thresholds[0]:
		return 0
	case elapsed < thresholds[1]:
		return 1
	}
	return 2
}

func (o *MLFQOptions) ensureDefaults() {
	if o.Thresholds == [2]time.Duration{} {
		o.Thresholds = DefaultLevelThresholds()
	}
	if o.Shares == [3]float64{} {
		o.Shares = [3]float64{0.80, 0.16, 0.04}
	}
	var sum float64
	for _, s := range o.Shares {
		sum += s
	}
	for i := range o.Shares {
		o.Shares[i] /= sum
	}
	if o.PruneEvery <= 0 {
		o.PruneEvery = 10 * time.Second
	}
}

// MLFQ is a three-level multilevel feedback queue. A task's level is derived
// when it enters the queue from the step time accumulated by its task id
// (or by the task itself when it has none), so a long scan sinks as it runs
// while a fresh request starts on level 0.
//
// Which level runs next is decided by time actually used, not by a
// probability: each level has a virtual time that advances by its step
// time divided by its share, and the non-empty level with the smallest
// virtual time runs. The shares hold whatever the step lengths — YATP's
// stepped "chance" cannot reach 80% when level-0 steps are much shorter
// than the others (yatp PR #35). A level that becomes active after being
// idle starts at the smallest virtual time among the active levels, so it
// cannot bank credit while it had nothing to run.
//
// Within level 0 the task whose identity has run least goes first (ties in
// arrival order): a fresh Get is not queued behind a scan that has already
// run 3 ms but has not yet sunk to level 1, so a short read waits for one
// step, not for the young scans ahead of it. Among the identities that
// have run nothing, point reads (Entry.Short) go first: all have attained
// the same, and a point read is the one that will finish in its step.
// Levels 1 and 2 are FIFO.
type MLFQ struct {
	opts     MLFQOptions
	points   EntryList // level 0, point reads that have not run yet: FIFO
	fresh    EntryList // level 0, other identities that have not run yet: FIFO
	top      EntryHeap // level 0, the others, least attained service first
	levels   [LowestLevel + 1]EntryList
	running  [3]int // popped entries whose step has not been Done
	vtime    [3]float64
	steps    [3]int64
	time     [3]time.Duration
	cur, old map[uint64]time.Duration
	lastSwap time.Duration
	pre      *Preemption
}

// NewMLFQ returns an empty MLFQ with the given options.
func NewMLFQ(opts MLFQOptions) *MLFQ {
	opts.ensureDefaults()
	return &MLFQ{
		opts: opts,
		cur:  make(map[uint64]time.Duration),
		old:  make(map[uint64]time.Duration),
		pre:  NewPreemption(),
	}
}

// elapsed returns the step time accumulated by e's identity.
func (q *MLFQ) elapsed(e *Entry) time.Duration {
	if e.TaskID == 0 {
		return e.Elapsed
	}
	// The pool pushes a yielding task before Done charges its step to the
	// id (see fileLocked): the task's own time that Done has not charged
	// yet (e.QueueState holds what it has) counts too, so that the step
	// that crossed a threshold demotes the task now, not a step later.
	pending := e.Elapsed - time.Duration(e.QueueState)
	if d, ok := q.cur[e.TaskID]; ok {
		return d + pending
	}
	return q.old[e.TaskID] + pending
}

// LevelOf reports the level e would be queued at now.
func (q *MLFQ) LevelOf(e *Entry) int {
	if e.Demoted {
		return len(q.levels) - 1
	}
	if e.Fixed {
		return min(max(e.FixedLevel, 0), len(q.levels)-1)
	}
	return LevelFor(q.elapsed(e), q.opts.Thresholds)
}

func (q *MLFQ) queued(i int) int {
	if i == 0 {
		return q.points.Len() + q.fresh.Len() + q.top.Len()
	}
	return q.levels[i].Len()
}

func (q *MLFQ) active(i int) bool { return q.queued(i) > 0 || q.running[i] > 0 }

// MayInline implements Queue: a task that would start on level 0 without
// looking up its id's history — no id, or pinned to level 0. A task with an
// id goes through the queue: its level depends on the id's time, which
// only the queue's lock may read.
func (q *MLFQ) MayInline(e *Entry) bool {
	if (e.Fixed && e.FixedLevel <= 0) || (!e.Fixed && e.TaskID == 0 && e.Elapsed < q.opts.Thresholds[0]) {
		e.Class = 0
		return true
	}
	return false
}

// Push implements Queue: e is queued at its level.
func (q *MLFQ) Push(e *Entry, _ time.Duration) {
	lv := q.admit(e)
	if lv == 0 {
		// Entries that have attained nothing come before all others and,
		// among themselves, in arrival order: a FIFO serves them in O(1)
		// (every Get), the heap only the young scans.
		attained := q.elapsed(e)
		if attained == 0 && e.Short {
			q.points.Push(e)
		} else if attained == 0 {
			q.fresh.Push(e)
		} else {
			e.Key = uint64(attained)
			q.top.Push(e)
		}
		q.pre.Set(0) // level 0 waits: lower levels yield at their next unit
		return
	}
	q.levels[lv].Push(e)
}

// Ran implements Queue: e ran at the level it would have been queued at.
func (q *MLFQ) Ran(e *Entry, _ time.Duration) {
	lv := q.admit(e)
	e.Class = int64(lv)
	q.running[lv]++
}

// admit assigns e its level, first bringing a level that returns from
// idleness up to the others' virtual time.
func (q *MLFQ) admit(e *Entry) int {
	lv := q.LevelOf(e)
	if !q.active(lv) {
		// Returning from idleness: no credit for the time it had no work.
		minV, any := 0.0, false
		for i := range q.levels {
			if i != lv && q.active(i) && (!any || q.vtime[i] < minV) {
				minV, any = q.vtime[i], true
			}
		}
		if any && q.vtime[lv] < minV {
			q.vtime[lv] = minV
		}
	}
	e.Level = lv
	return lv
}

// Ahead implements QueuePosition: a fresh point read waits only for the
// point reads queued before it, another fresh task for all fresh ones, a
// level-0 task that has run for level 0; a lower level's task shares the
// workers with every level, so for all that is queued.
func (q *MLFQ) Ahead(e *Entry) int {
	lv := q.LevelOf(e)
	switch {
	case lv > 0:
		return q.Len()
	case q.elapsed(e) > 0:
		return q.queued(0)
	case e.Short:
		return q.points.Len()
	}
	return q.points.Len() + q.fresh.Len()
}

// Pop implements Queue: the non-empty level furthest behind its share.
func (q *MLFQ) Pop(time.Duration) *Entry {
	best := -1
	for i := range q.levels {
		if q.queued(i) > 0 && (best < 0 || q.vtime[i] < q.vtime[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return q.popLevel(best)
}

// popLevel pops the next entry of level lv, which has one queued.
func (q *MLFQ) popLevel(lv int) *Entry {
	var e *Entry
	switch {
	case lv == 0 && q.points.Len() > 0:
		e = q.points.Pop()
	case lv == 0 && q.fresh.Len() > 0:
		e = q.fresh.Pop()
	case lv == 0:
		e = q.top.Pop()
	default:
		e = q.levels[lv].Pop()
	}
	e.Class = int64(lv)
	q.running[lv]++
	q.publish()
	return e
}

// PopUrgent implements UrgentPopper: the next point read that has not run
// yet, whatever the levels' shares say (the spare workers that call it add
// capacity for point reads beside the workers; they take nothing from the
// other tasks, young scans included).
func (q *MLFQ) PopUrgent(time.Duration) *Entry {
	if q.points.Len() == 0 {
		return nil
	}
	return q.popLevel(0)
}

// Urgent implements UrgentPopper: the point reads queued.
func (q *MLFQ) Urgent() int { return q.points.Len() }

// PopBatch implements Batcher: after a point read that has not run, more
// of them (PopUrgent), which go ahead of everything else anyway; after
// anything else, nothing, so that the levels' shares decide every pop.
func (q *MLFQ) PopBatch(first *Entry, now time.Duration) *Entry {
	if !first.Short || first.Elapsed != 0 || first.Class != 0 {
		return nil
	}
	return q.PopUrgent(now)
}

// Remove implements Queue.
func (q *MLFQ) Remove(e *Entry) bool {
	if !e.Queued() {
		return false
	}
	e.Unlink()
	q.publish()
	return true
}

// publish tells running steps whether level-0 work waits.
func (q *MLFQ) publish() {
	if q.queued(0) > 0 {
		q.pre.Set(0)
	} else {
		q.pre.Set(NoPreemption)
	}
}

// Held implements Queue: the MLFQ holds nothing back.
func (q *MLFQ) Held() (int, time.Duration) { return 0, 0 }

// Preemption implements Queue: level-0 work waiting preempts steps of the
// lower levels at their next unit, so a short read waits for one unit of a
// scan's step, not all of it.
func (q *MLFQ) Preemption() *Preemption { return q.pre }

// Done implements Queue: it charges the step to the level it ran at and to
// the task's id, and swaps the id map's generations when one is due.
func (q *MLFQ) Done(e *Entry, elapsed, now time.Duration) {
	lv := int(e.Class) // e.Level may already say where a requeue put it
	q.running[lv]--
	q.steps[lv]++
	q.time[lv] += elapsed
	q.vtime[lv] += float64(elapsed) / q.opts.Shares[lv]
	if e.TaskID != 0 && elapsed > 0 {
		d, ok := q.cur[e.TaskID]
		if !ok {
			d = q.old[e.TaskID]
		}
		q.cur[e.TaskID] = d + elapsed
		e.QueueState += uint64(elapsed) // e's own time charged to its id
	}
	q.maybePrune(now)
}

// maybePrune swaps generations in O(1): the old map is dropped whole (the
// GC frees it), never walked — walking it on the spawn path cost TiKV tens
// of milliseconds of tail latency (tikv #14188).
func (q *MLFQ) maybePrune(now time.Duration) {
	if now-q.lastSwap < q.opts.PruneEvery {
		return
	}
	q.lastSwap = now
	q.old = q.cur
	q.cur = make(map[uint64]time.Duration)
}

// trackedIDs is the number of task ids whose time is remembered (for
// tests: the map is bounded).
func (q *MLFQ) trackedIDs() int {
	n := len(q.cur)
	for id := range q.old {
		if _, ok := q.cur[id]; !ok {
			n++
		}
	}
	return n
}

// Len implements Queue.
func (q *MLFQ) Len() int { return q.queued(0) + q.queued(1) + q.queued(2) }

// Stats implements Queue.
func (q *MLFQ) Stats() QueueStats {
	s := QueueStats{Kind: "mlfq", Levels: make([]LevelStats, len(q.levels))}
	var total time.Duration
	var activeShare float64
	for i := range q.levels {
		s.Levels[i] = LevelStats{Queued: q.queued(i), Steps: q.steps[i], Time: q.time[i]}
		total += q.time[i]
		if q.active(i) {
			activeShare += q.opts.Shares[i]
		}
	}
	if total > 0 {
		s.Level0Share = float64(q.time[0]) / float64(total)
	}
	switch {
	case !q.active(0):
		s.Chance = 0
	default:
		s.Chance = q.opts.Shares[0] / activeShare
	}
	return s
}

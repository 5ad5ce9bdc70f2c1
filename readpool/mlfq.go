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

func (o *MLFQOptions) ensureDefaults() {
	if o.Thresholds == [2]time.Duration{} {
		o.Thresholds = [2]time.Duration{5 * time.Millisecond, 100 * time.Millisecond}
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
// step, not for the young scans ahead of it. Levels 1 and 2 are FIFO.
type MLFQ struct {
	opts     MLFQOptions
	fresh    list    // level 0, identities that have not run yet: FIFO
	top      lasHeap // level 0, the others, least attained service first
	levels   [3]list // levels 1 and 2 (levels[0] is unused)
	running  [3]int  // popped entries whose step has not been Done
	vtime    [3]float64
	steps    [3]int64
	time     [3]time.Duration
	cur, old map[uint64]time.Duration
	lastSwap time.Duration
	seq      uint64
}

// lasHeap is a binary min-heap of entries by (attained, seq), typed to
// spare the hot path container/heap's interface calls.
type lasHeap struct{ es []*Entry }

func lasLess(a, b *Entry) bool {
	if a.attained != b.attained {
		return a.attained < b.attained
	}
	return a.seq < b.seq
}

func (h *lasHeap) push(e *Entry) {
	h.es = append(h.es, e)
	i := len(h.es) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !lasLess(h.es[i], h.es[parent]) {
			break
		}
		h.es[i], h.es[parent] = h.es[parent], h.es[i]
		i = parent
	}
}

func (h *lasHeap) pop() *Entry {
	n := len(h.es) - 1
	top := h.es[0]
	h.es[0] = h.es[n]
	h.es[n] = nil
	h.es = h.es[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && lasLess(h.es[l], h.es[m]) {
			m = l
		}
		if r < n && lasLess(h.es[r], h.es[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.es[i], h.es[m] = h.es[m], h.es[i]
		i = m
	}
	return top
}

// NewMLFQ returns an empty MLFQ with the given options.
func NewMLFQ(opts MLFQOptions) *MLFQ {
	opts.ensureDefaults()
	return &MLFQ{
		opts: opts,
		cur:  make(map[uint64]time.Duration),
		old:  make(map[uint64]time.Duration),
	}
}

// elapsed returns the step time accumulated by e's identity.
func (q *MLFQ) elapsed(e *Entry) time.Duration {
	if e.TaskID == 0 {
		return e.Elapsed
	}
	if d, ok := q.cur[e.TaskID]; ok {
		return d
	}
	return q.old[e.TaskID]
}

// LevelOf reports the level e would be queued at now.
func (q *MLFQ) LevelOf(e *Entry) int {
	if e.Fixed {
		return min(max(e.FixedLevel, 0), len(q.levels)-1)
	}
	d := q.elapsed(e)
	switch {
	case d < q.opts.Thresholds[0]:
		return 0
	case d < q.opts.Thresholds[1]:
		return 1
	default:
		return 2
	}
}

func (q *MLFQ) queued(i int) int {
	if i == 0 {
		return q.fresh.n + len(q.top.es)
	}
	return q.levels[i].n
}

func (q *MLFQ) active(i int) bool { return q.queued(i) > 0 || q.running[i] > 0 }

// Push implements Queue.
func (q *MLFQ) Push(e *Entry, _ time.Duration) {
	lv := q.admit(e)
	if lv == 0 {
		// Entries that have attained nothing come before all others and,
		// among themselves, in arrival order: a FIFO serves them in O(1)
		// (every Get), the heap only the young scans.
		if e.attained = q.elapsed(e); e.attained == 0 {
			q.fresh.push(e)
			return
		}
		q.seq++
		e.seq = q.seq
		q.top.push(e)
		return
	}
	q.levels[lv].push(e)
}

// Ran implements Queue: e ran at the level it would have been queued at.
func (q *MLFQ) Ran(e *Entry, _ time.Duration) {
	lv := q.admit(e)
	e.runLevel = lv
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
	var e *Entry
	switch {
	case best == 0 && q.fresh.n > 0:
		e = q.fresh.pop()
	case best == 0:
		e = q.top.pop()
	default:
		e = q.levels[best].pop()
	}
	e.runLevel = best
	q.running[best]++
	return e
}

// Done implements Queue: it charges the step to the level it ran at and to
// the task's id, and swaps the id map's generations when one is due.
func (q *MLFQ) Done(e *Entry, elapsed, now time.Duration) {
	lv := e.runLevel // e.Level may already say where a requeue put it
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

// TrackedIDs is the number of task ids whose time is remembered.
func (q *MLFQ) TrackedIDs() int {
	n := len(q.cur)
	for id := range q.old {
		if _, ok := q.cur[id]; !ok {
			n++
		}
	}
	return n
}

// Len implements Queue.
func (q *MLFQ) Len() int { return q.queued(0) + q.levels[1].n + q.levels[2].n }

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

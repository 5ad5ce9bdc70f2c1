package resource

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Runaways keeps a store's runaway reads: it judges each read against its
// rule after every step, counts the reads that turn runaway, and keeps the
// watch list. The read path calls it from many goroutines: NewRead at a
// read's spawn, Observe after each of its steps. Both cost no lock and no
// allocation while no rule catches the read and no watch is live; the
// rest (a read turning runaway, a lookup while watches live, Stats) takes
// one mutex over the pure watch list and counters.
type Runaways struct {
	now func() time.Time // read only to add, look up or list watches

	// watching is the watch list's length (expired entries not yet dropped
	// included), stored under mu after every change of the list. NewRead
	// loads it without mu: a 0 means no watch could match, and a read
	// that sees 0 while a watch is being added is as one spawned just
	// before it — the same answer a lock would have given a moment sooner.
	watching atomic.Int64

	mu      sync.Mutex
	watches *watchList
	counts  runawayCounts
}

// NewRunaways returns a store's runaway keeper. now is its clock for
// watches (nil = time.Now); maxWatches bounds the watch list (0 =
// DefaultMaxWatches): when full, the watch expiring soonest makes room.
func NewRunaways(now func() time.Time, maxWatches int) *Runaways {
	if now == nil {
		now = time.Now
	}
	if maxWatches <= 0 {
		maxWatches = DefaultMaxWatches
	}
	return &Runaways{now: now, watches: newWatchList(maxWatches), counts: runawayCounts{groups: map[string]*RunawayGroupStats{}}}
}

// Watching reports whether a watch may be live: false means NewRead would
// find none. Lock-free, for a read path that starts a read's state only
// when a watch could catch it.
func (r *Runaways) Watching() bool { return r.watching.Load() > 0 }

// RunawayRead is one read's standing with the runaway rules. The caller
// keeps it in the read's task, from NewRead to the read's end, and hands
// it to Observe after each step; it is a plain value (no allocation) and,
// like the task's step, used by one goroutine at a time.
type RunawayRead struct {
	group   string
	key     WatchKey
	watch   RunawayAction // of the watch that matched at spawn; "" none
	action  RunawayAction // in force for the next step
	counted uint8         // a bit per action the read is counted under
}

// Action is the action in force for the read's next step: "" while it is
// not runaway.
func (rd *RunawayRead) Action() RunawayAction { return rd.action }

// Watched reports whether a watch matched the read at its spawn.
func (rd *RunawayRead) Watched() bool { return rd.watch != "" }

// bit is a's bit in RunawayRead.counted.
func (a RunawayAction) bit() uint8 { return 1 << a.severity() }

// NewRead starts a read of group (the name of the group it runs in:
// DefaultGroup without resource control, or for an unknown group) with
// identity key. If a live watch matches, the read is runaway from its
// first step, with the watch's action: Action says which, and the read is
// counted under it now.
func (r *Runaways) NewRead(group string, key WatchKey) RunawayRead {
	rd := RunawayRead{group: group, key: key}
	if key.None || r.watching.Load() == 0 {
		return rd
	}
	r.mu.Lock()
	a, ok := r.watches.lookup(group, key, r.now())
	r.watching.Store(int64(r.watches.len()))
	if ok {
		r.counts.add(group, a, true)
	}
	r.mu.Unlock()
	if ok {
		rd.watch, rd.action, rd.counted = a, a, a.bit()
	}
	return rd
}

// Observe judges the read after a step: exec is its worker time so far
// (the sum of its steps), rows the rows it has read so far, rule the rule
// in force now (Group.Runaway, or kv.Options.Runaway without resource
// control; nil = none). It returns the action in force for the read's
// next step — the severer of its watch's and, if the read is past the
// rule's limits, the rule's; "" for none — and newly, true on the one step
// on which the read first came under that action: then, and only then,
// the read is counted under it and, if the rule caught it and has a
// Watch, its identity is watched (the caller logs it then).
//
// The rule is judged afresh at every step, so a rule added, tightened,
// relaxed or removed applies from the read's next step: a read that a
// removed rule had cooled down runs as any other again. The totals only
// grow, so under one rule a runaway read stays runaway.
func (r *Runaways) Observe(rd *RunawayRead, rule *RunawayRule, exec time.Duration, rows int64) (action RunawayAction, newly bool) {
	a := rd.watch
	caught := judge(rule, exec, rows)
	if caught {
		a = severer(a, rule.Action)
	}
	rd.action = a
	if a == "" || rd.counted&a.bit() != 0 {
		return a, false
	}
	rd.counted |= a.bit()
	r.mu.Lock()
	r.counts.add(rd.group, a, false)
	if caught && rule.Watch > 0 && !rd.key.None {
		now := r.now()
		r.watches.add(rd.group, rd.key, rule.Action, now, now.Add(rule.Watch))
		r.watching.Store(int64(r.watches.len()))
	}
	r.mu.Unlock()
	return a, true
}

// RunawayStats is a snapshot of a store's runaway reads.
type RunawayStats struct {
	// Groups counts, per group (by name), the reads that turned runaway,
	// by action. A read whose rule changed under it is counted under each
	// action it came under.
	Groups []RunawayGroupStats `json:"groups"`
	// OtherGroups counts the runaway reads of groups beyond the first
	// MaxRunawayGroups named in Groups (a loop that makes groups of new
	// names must not grow the counters without bound).
	OtherGroups int64 `json:"other_groups"`
	// Watches are the live watches, soonest to expire first.
	Watches []RunawayWatch `json:"watches"`
	// WatchesEvicted counts live watches dropped to make room in a full
	// list.
	WatchesEvicted int64 `json:"watches_evicted"`
}

// MaxRunawayGroups bounds the groups RunawayStats counts by name: the
// groups that may exist at once, four times over.
const MaxRunawayGroups = 4 * MaxGroups

// RunawayGroupStats counts one group's runaway reads, by action.
type RunawayGroupStats struct {
	Group    string `json:"group"`
	DryRun   int64  `json:"dryrun"`
	Cooldown int64  `json:"cooldown"`
	Kill     int64  `json:"kill"`
	// Watched counts those of them that a watch caught at their spawn.
	Watched int64 `json:"watched"`
}

// Count returns the reads counted under a.
func (s *RunawayGroupStats) Count(a RunawayAction) int64 {
	switch a {
	case RunawayDryRun:
		return s.DryRun
	case RunawayCooldown:
		return s.Cooldown
	case RunawayKill:
		return s.Kill
	}
	return 0
}

// RunawayWatch is a live watch: new reads of Group with its identity (a
// task id or, when TaskID is 0, a start key) are runaway with Action
// until Expires.
type RunawayWatch struct {
	Group  string `json:"group"`
	TaskID uint64 `json:"task_id,omitempty"`
	// StartKey is the identity's start key, its first MaxWatchKeyLen bytes
	// when StartKeyCut (the list then tells longer keys apart by a hash).
	StartKey    []byte        `json:"start_key,omitempty"`
	StartKeyCut bool          `json:"start_key_cut,omitempty"`
	Action      RunawayAction `json:"action"`
	Expires     time.Time     `json:"expires"`
}

// Stats returns the counts and the live watches.
func (r *Runaways) Stats() RunawayStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.watches.live(r.now())
	r.watching.Store(int64(r.watches.len()))
	return RunawayStats{
		Groups:         r.counts.stats(),
		OtherGroups:    r.counts.other,
		Watches:        ws,
		WatchesEvicted: r.watches.evicted,
	}
}

// runawayCounts is the pure counters: per group, by action, at most
// MaxRunawayGroups groups by name and the rest together.
type runawayCounts struct {
	groups map[string]*RunawayGroupStats
	other  int64
}

// add counts a read of group that came under a; watched if by a watch.
func (c *runawayCounts) add(group string, a RunawayAction, watched bool) {
	g, ok := c.groups[group]
	if !ok {
		if len(c.groups) >= MaxRunawayGroups {
			c.other++
			return
		}
		g = &RunawayGroupStats{Group: group}
		c.groups[group] = g
	}
	switch a {
	case RunawayDryRun:
		g.DryRun++
	case RunawayCooldown:
		g.Cooldown++
	case RunawayKill:
		g.Kill++
	}
	if watched {
		g.Watched++
	}
}

// stats returns a copy of the counts, by group name.
func (c *runawayCounts) stats() []RunawayGroupStats {
	out := make([]RunawayGroupStats, 0, len(c.groups))
	for _, g := range c.groups {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out
}

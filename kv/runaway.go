package kv

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// Runaway reads (TiDB's runaway queries): a read that has run longer than
// a rule's ExecElapsed of worker time, or read more than its RowsScanned
// rows, is counted, logged, run at the lowest priority or ended, as the
// rule's action says, from its next step; its identity is then watched,
// so that the same read coming again is treated so from its first step.
// The rule is its group's (resource.GroupConfig.Runaway) under resource
// control, Options.Runaway without it. The policy is resource.Runaways';
// the pool applies its verdict at the read's next step boundary
// (readpool.Governor). Reads of SchedulerDirect have no steps: no rule
// applies to them.

// cooledSlots is how many runaway reads in cooldown may be ready or running
// at once, across groups: a quarter of the workers, at least one. The rest
// wait their turn (readpool.Options.CooledSlots): the lowest priority alone lets
// cooled-down reads take every worker whenever nothing else is queued, and
// the program's own goroutines then wait for a P beside them. workers is
// Options.Workers with its default filled (Options.ensureDefaults: the
// pool's).
func cooledSlots(workers int) int { return max(1, workers/4) }

// governor is the store's readpool.Governor.
type governor struct {
	rw *resource.Runaways
	// rule is Options.Runaway, or what SetRunaway put: the rule without
	// resource control, read at every step.
	rule atomic.Pointer[resource.RunawayRule]
	log  *slog.Logger
}

func newGovernor(o *Options) *governor {
	g := &governor{rw: resource.NewRunaways(nil, 0), log: o.Logger}
	g.rule.Store(cloneRule(o.Runaway))
	return g
}

func cloneRule(r *resource.RunawayRule) *resource.RunawayRule {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// SetRunaway replaces the runaway rule for reads without resource control
// (Options.Runaway); nil removes it. Running reads are judged by the new
// rule from their next step. An invalid rule is refused with an error that
// errors.Is resource.ErrInvalidRunaway, and changes nothing. Under
// resource control each group's rule applies instead
// (resource.GroupConfig.Runaway); with SchedulerDirect there are no steps
// to judge, and SetRunaway fails.
func (db *DB) SetRunaway(rule *resource.RunawayRule) error {
	if err := rule.Validate(); err != nil {
		return fmt.Errorf("kv: SetRunaway: %w", err)
	}
	if db.gov == nil {
		return errors.New("kv: SetRunaway: SchedulerDirect runs reads without steps")
	}
	db.gov.rule.Store(cloneRule(rule))
	return nil
}

// groupOf is the resource group a read's tag (Entry.Tag, SpawnOptions.Tag)
// names: nil without resource control.
func groupOf(tag any) *resource.Group {
	grp, _ := tag.(*resource.Group)
	return grp
}

// ruleFor is the rule in force for a read of group grp now: its group's,
// read afresh at every step, so that a group's rule changed by Put applies
// from the next; the store's without resource control.
func (g *governor) ruleFor(grp *resource.Group) *resource.RunawayRule {
	if grp != nil {
		return grp.Runaway()
	}
	return g.rule.Load()
}

// groupName is the name grp's reads are counted and watched under.
func groupName(grp *resource.Group) string {
	if grp != nil {
		return grp.Name()
	}
	return resource.DefaultGroup
}

// unwatchedPoint is the Governed of a point read without a task id until
// a rule first applies to it: it has no identity to watch
// (resource.WatchKey.None); without it, a MultiGet whose step yields would
// reach Govern keyed by its first key, and share a watch with a scan that
// started there (TestRunaway_YieldingMultiGetIsNotAWatchedScan).
var unwatchedPoint any = &struct{ _ byte }{}

// watchKey is a read's identity for watches: its task id, or without one
// its start key.
func watchKey(taskID uint64, origin []byte) resource.WatchKey {
	if taskID != 0 {
		return resource.WatchKey{TaskID: taskID}
	}
	return resource.WatchKey{StartKey: string(origin)}
}

// Govern implements readpool.Governor. A read under no rule and caught by
// no watch carries no state and costs a type check and an atomic load a
// step; its state is made the first time a rule is in force for it.
func (g *governor) Govern(e *readpool.Entry, _ readpool.Task) readpool.Verdict {
	grp := groupOf(e.Tag)
	rule := g.ruleFor(grp)
	rd, _ := e.Governed.(*resource.RunawayRead)
	if rd == nil {
		if rule == nil {
			return readpool.Verdict{}
		}
		key := watchKey(e.TaskID, e.Origin)
		if e.Governed == unwatchedPoint {
			key = resource.WatchKey{None: true}
		}
		r := g.rw.NewRead(groupName(grp), key)
		rd = &r
		e.Governed = rd
	}
	a, newly := g.rw.Observe(rd, rule, e.Elapsed, e.Rows)
	if newly {
		g.log.Warn("kv: runaway read", "group", groupName(grp), "action", string(a), "rule", rule.String(),
			"exec", e.Elapsed, "rows", e.Rows, "task_id", e.TaskID, "start", e.Origin)
	}
	return verdict(a)
}

func verdict(a resource.RunawayAction) readpool.Verdict {
	switch a {
	case resource.RunawayKill:
		return readpool.Verdict{Stop: ErrRunaway}
	case resource.RunawayCooldown:
		return readpool.Verdict{Demote: true}
	}
	return readpool.Verdict{}
}

// watched sets o up for a read whose identity a live watch may know: it
// starts the read's state (Governed) and, if a watch catches it, applies
// the watch's action before the first step — ErrRunaway at once for
// kill, the lowest priority for cooldown. origin is what the read reads
// first. A point read (Get, MultiGet) is caught only by its task id: its
// key is not a start key, and a Get of the first key a runaway scan read
// is not that scan coming again. Nothing is done, and nothing allocated,
// while no watch is live.
func (g *governor) watched(o *readpool.SpawnOptions, origin []byte, point bool) error {
	o.Origin = origin
	if point && o.TaskID == 0 {
		// Marked, so that Govern does not take origin for a start key
		// when a rule first applies to the read, after a step.
		o.Governed = unwatchedPoint
		return nil
	}
	if !g.rw.Watching() {
		return nil
	}
	group := groupName(groupOf(o.Tag))
	rd := g.rw.NewRead(group, watchKey(o.TaskID, origin))
	if rd.Watched() {
		// Info, not Warn: a client retrying a watched read would fill the
		// log; the watch was logged when its rule caught the first.
		g.log.Info("kv: runaway read caught by a watch", "group", group, "action", string(rd.Action()),
			"task_id", o.TaskID, "start", origin)
	}
	// The verdict a step would get, applied before the first.
	v := verdict(rd.Action())
	if v.Stop != nil {
		return v.Stop
	}
	o.Demoted = v.Demote
	o.Governed = &rd
	return nil
}

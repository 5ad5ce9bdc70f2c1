package kv

import (
	"context"
	"time"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// A request's scheduling extras travel in one context value, so that a
// read looks them all up with one ctx.Value walk, not one per extra: each
// With function copies the extras it finds and sets one.
type extrasKey struct{}

// readExtras are what the With functions set.
type readExtras struct {
	taskID       uint64
	hasTaskID    bool
	priority     resource.Priority
	hasPriority  bool
	group        string
	maxQueueWait time.Duration
}

// extrasOf returns ctx's extras; the zero value when none were set.
func extrasOf(ctx context.Context) readExtras {
	if e, ok := ctx.Value(extrasKey{}).(*readExtras); ok {
		return *e
	}
	return readExtras{}
}

// withExtras returns ctx carrying ctx's extras changed by set.
func withExtras(ctx context.Context, set func(*readExtras)) context.Context {
	e := extrasOf(ctx)
	set(&e)
	return context.WithValue(ctx, extrasKey{}, &e)
}

// WithMaxQueueWait makes the reads made with ctx fail at once with ErrBusy,
// as a *BusyError that says the estimate, when the pool estimates that one
// would wait longer than d for its first step; d <= 0 removes the limit.
// For a caller with somewhere else to go — a replica, a cache, a degraded
// answer — waiting is pointless (TiKV's busy_threshold_ms). The estimate
// is what the queue holds ahead of the read and the workers' recent step
// times; the store's Stats.Pool.Waits count how often admitted reads
// started within it.
func WithMaxQueueWait(ctx context.Context, d time.Duration) context.Context {
	return withExtras(ctx, func(e *readExtras) { e.maxQueueWait = d })
}

// MaxQueueWaitFrom returns the limit WithMaxQueueWait set in ctx; 0 when
// none was set.
func MaxQueueWaitFrom(ctx context.Context) time.Duration {
	return max(extrasOf(ctx).maxQueueWait, 0)
}

// WithResourceGroup makes the reads made with ctx run in resource group
// group, under resource control (Options.ResourceControl): they are
// scheduled by its share and class and charged to it. An unknown group
// runs as resource.DefaultGroup. Without resource control it has no
// effect.
func WithResourceGroup(ctx context.Context, group string) context.Context {
	return withExtras(ctx, func(e *readExtras) { e.group = group })
}

// WithTaskID gives the reads made with ctx one MLFQ identity: their time
// adds up, so a client that splits one big job into many small reads is
// still scheduled as one big job. Without it every read is its own task.
//
// A read with a task id always goes through the pool's queue: it never
// takes the inline fast path (its first step on the caller's goroutine
// when a worker is idle), because its level depends on the time the id has
// already used, which only the queue knows. Short Gets made with a task id
// therefore pay a hand-off to a worker that other Gets do not.
func WithTaskID(ctx context.Context, id uint64) context.Context {
	return withExtras(ctx, func(e *readExtras) { e.taskID, e.hasTaskID = id, true })
}

// WithPriority sets the priority of the reads made with ctx. Under the MLFQ,
// PriorityHigh pins them to the top level and PriorityLow to the bottom one
// (background work); PriorityMedium, the default, lets their elapsed time
// decide. Under resource control it overrides the class of the reads'
// group. 0 means PriorityMedium. Any other value makes the reads made with
// ctx fail with an error that names it.
func WithPriority(ctx context.Context, p resource.Priority) context.Context {
	if p == 0 {
		p = resource.PriorityMedium
	}
	return withExtras(ctx, func(e *readExtras) { e.priority, e.hasPriority = p, true })
}

// spawnOptions reads a request's scheduling extras from its context. It
// fails for a priority that is not one of resource's classes: taking it
// silently would schedule the read on a level nobody asked for. With
// resource control (groups non-nil) the request's group is resolved here,
// once, and travels with its task as a pointer.
func spawnOptions(ctx context.Context, groups *resource.Manager) (readpool.SpawnOptions, error) {
	var o readpool.SpawnOptions
	x := extrasOf(ctx)
	o.TaskID = x.taskID
	o.MaxQueueWait = max(x.maxQueueWait, 0)
	p, hasPriority := x.priority, x.hasPriority
	if hasPriority && !p.Valid() {
		return o, priorityError(p)
	}
	if groups != nil {
		g := groups.Resolve(x.group)
		o.Tag, o.Group = g, g.Name()
		if hasPriority {
			o.Priority = uint64(p)
		}
		return o, nil
	}
	if hasPriority {
		switch p {
		case resource.PriorityHigh:
			o.Fixed, o.Level = true, 0
		case resource.PriorityLow:
			o.Fixed, o.Level = true, 2
		case resource.PriorityMedium:
		default:
			return o, priorityError(p)
		}
	}
	return o, nil
}

// The request context as another backend reads it (package kv/tikv carries
// it to TiKV's resource control): what the With functions above set.

// ResourceGroupFrom returns the group WithResourceGroup set in ctx; "" when
// none was set.
func ResourceGroupFrom(ctx context.Context) string { return extrasOf(ctx).group }

// PriorityFrom returns the priority WithPriority set in ctx, and whether
// one was set. It may be invalid (resource.Priority.Valid): a backend
// fails such a request, as the store does.
func PriorityFrom(ctx context.Context) (resource.Priority, bool) {
	x := extrasOf(ctx)
	return x.priority, x.hasPriority
}

// TaskIDFrom returns the task id WithTaskID set in ctx, and whether one
// was set.
func TaskIDFrom(ctx context.Context) (uint64, bool) {
	x := extrasOf(ctx)
	return x.taskID, x.hasTaskID
}

// readOptions is spawnOptions for a read of the store whose first key is
// origin, a point read or not, with the runaway watches applied (see
// governor.watched).
func (db *DB) readOptions(ctx context.Context, origin []byte, point bool) (readpool.SpawnOptions, error) {
	o, err := spawnOptions(ctx, db.groupsIfControlled())
	if err != nil || db.gov == nil {
		return o, err
	}
	return o, db.gov.watched(&o, origin, point)
}

// firstOf is keys[0], nil for none: a MultiGet's origin.
func firstOf(keys [][]byte) []byte {
	if len(keys) == 0 {
		return nil
	}
	return keys[0]
}

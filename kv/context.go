package kv

import (
	"context"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

type ctxKey int

const (
	taskIDKey ctxKey = iota
	priorityKey
)

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
	return context.WithValue(ctx, taskIDKey, id)
}

// WithPriority sets the priority of the reads made with ctx. Under the MLFQ,
// PriorityHigh pins them to the top level and PriorityLow to the bottom one
// (background work); PriorityMedium, the default, lets their elapsed time
// decide. 0 means PriorityMedium. Any other value makes the reads made with
// ctx fail with an error that names it.
func WithPriority(ctx context.Context, p resource.Priority) context.Context {
	if p == 0 {
		p = resource.PriorityMedium
	}
	return context.WithValue(ctx, priorityKey, p)
}

// spawnOptions reads a request's scheduling extras from its context. It
// fails for a priority that is not one of resource's classes: taking it
// silently would schedule the read on a level nobody asked for.
func spawnOptions(ctx context.Context) (readpool.SpawnOptions, error) {
	var o readpool.SpawnOptions
	if id, ok := ctx.Value(taskIDKey).(uint64); ok {
		o.TaskID = id
	}
	if p, ok := ctx.Value(priorityKey).(resource.Priority); ok {
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

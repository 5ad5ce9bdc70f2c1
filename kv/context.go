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
func WithTaskID(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, taskIDKey, id)
}

// WithPriority sets the priority of the reads made with ctx. Under the MLFQ,
// PriorityHigh pins them to the top level and PriorityLow to the bottom one
// (background work); PriorityMedium, the default, lets their elapsed time
// decide.
func WithPriority(ctx context.Context, p resource.Priority) context.Context {
	return context.WithValue(ctx, priorityKey, p)
}

// spawnOptions reads a request's scheduling extras from its context.
func spawnOptions(ctx context.Context) readpool.SpawnOptions {
	var o readpool.SpawnOptions
	if id, ok := ctx.Value(taskIDKey).(uint64); ok {
		o.TaskID = id
	}
	if p, ok := ctx.Value(priorityKey).(resource.Priority); ok {
		switch {
		case p >= resource.PriorityHigh:
			o.Fixed, o.Level = true, 0
		case p <= resource.PriorityLow:
			o.Fixed, o.Level = true, 2
		}
	}
	return o
}

package kv_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

func TestContext_FromReadsWhatWithSet(t *testing.T) {
	ctx := context.Background()
	assert.Empty(t, kv.ResourceGroupFrom(ctx))
	_, ok := kv.PriorityFrom(ctx)
	assert.False(t, ok, "no priority set")
	_, ok = kv.TaskIDFrom(ctx)
	assert.False(t, ok, "no task id set")

	ctx = kv.WithTaskID(kv.WithPriority(kv.WithResourceGroup(ctx, "tenant-a"), resource.PriorityHigh), 42)
	assert.Equal(t, "tenant-a", kv.ResourceGroupFrom(ctx))
	p, ok := kv.PriorityFrom(ctx)
	assert.True(t, ok)
	assert.Equal(t, resource.PriorityHigh, p)
	id, ok := kv.TaskIDFrom(ctx)
	assert.True(t, ok)
	assert.EqualValues(t, 42, id)

	p, _ = kv.PriorityFrom(kv.WithPriority(context.Background(), 0))
	assert.Equal(t, resource.PriorityMedium, p, "0 means medium, as WithPriority says")
	p, _ = kv.PriorityFrom(kv.WithPriority(context.Background(), 5))
	assert.False(t, p.Valid(), "an invalid priority is handed on for the backend to refuse")
}

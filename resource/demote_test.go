package resource

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// A demoted task (a runaway read's cooldown) runs in the low class at the
// last level's penalty, whatever its group's and its own priority: a fresh
// task of a low-priority group goes before it.
func TestScheduler_DemotedRunsLast(t *testing.T) {
	m := NewManager()
	require.NoError(t, m.Put(GroupConfig{Name: "hi", Priority: PriorityHigh}))
	require.NoError(t, m.Put(GroupConfig{Name: "lo", Priority: PriorityLow}))
	s := NewScheduler(m)
	demoted := &readpool.Entry{Tag: m.Resolve("hi"), Priority: uint64(PriorityHigh), Demoted: true}
	fresh := &readpool.Entry{Tag: m.Resolve("lo")}
	s.Push(demoted, 0)
	s.Push(fresh, 0)
	assert.Same(t, fresh, s.Pop(0))
	assert.Same(t, demoted, s.Pop(0))
	assert.Equal(t, 2, demoted.Level)
	assert.EqualValues(t, 2, demoted.Class>>classShift, "the low class")
}

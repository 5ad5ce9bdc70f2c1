package readpool

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The extras' moves, without a pool or a goroutine: take counts one
// running while the rule allows, reusing the idle ones last parked first;
// park and retire uncount; closing hands back the idle ones, the started
// ones counted again.
func TestExtras_Moves(t *testing.T) {
	x := extras{rule: extraRule{workers: 2, maxExtras: 3}}
	blocked := func(n int64) extraDemand { return extraDemand{blocked: n} }

	assert.Nil(t, x.take(blocked(0)), "nothing blocked: no extra")
	a := x.take(blocked(2))
	b := x.take(blocked(2))
	require.NotNil(t, a)
	require.NotNil(t, b)
	assert.NotSame(t, a, b)
	assert.Nil(t, x.take(blocked(2)), "two reads blocked: two extras")
	assert.Equal(t, 2, x.running)
	assert.True(t, a.extra && !a.started, "new, its goroutine for the owner to start")

	a.started = true
	x.park(a)
	assert.True(t, a.parked)
	assert.Equal(t, 1, x.running)
	assert.True(t, x.tooMany(blocked(0)), "no read blocked: the running one is one too many")
	assert.False(t, x.tooMany(blocked(1)))
	assert.Same(t, a, x.take(blocked(2)), "the idle one again")
	assert.False(t, a.parked)

	c := x.take(blocked(9))
	require.NotNil(t, c)
	assert.Nil(t, x.take(blocked(9)), "MaxWorkers' bound: three extras")
	assert.Equal(t, 3, x.running)
	assert.Len(t, x.all, 3)

	x.park(b) // never started: a caller borrowed its slot
	x.park(a)
	x.retire(c, true)
	assert.Equal(t, 0, x.running)
	assert.Len(t, x.all, 2)
	started, never := x.closing()
	assert.Equal(t, []*worker{a}, started, "woken to see Close")
	assert.Equal(t, []*worker{b}, never, "retired by Close")
	assert.Equal(t, 1, x.running, "a runs again until it exits")
	assert.Empty(t, x.idle)
	x.retire(a, true)
	x.retire(b, false)
	assert.Zero(t, x.running)
	assert.Empty(t, x.all)
}

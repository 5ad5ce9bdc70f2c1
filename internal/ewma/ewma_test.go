package ewma

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNext(t *testing.T) {
	assert.Equal(t, 125*time.Microsecond, Next(0, time.Millisecond), "an eighth of the first sample")
	assert.Equal(t, time.Millisecond, Next(time.Millisecond, time.Millisecond), "steady")
	assert.Equal(t, 7*time.Millisecond, Next(8*time.Millisecond, 0), "down by an eighth")
}

func TestDuration_ConvergesToASteadySample(t *testing.T) {
	var a Duration
	for range 12 {
		a.Record(time.Millisecond)
	}
	assert.InDelta(t, float64(time.Millisecond), float64(a.Load()), float64(time.Millisecond)/3, "a dozen samples weigh most")
	for range 60 {
		a.Record(time.Millisecond)
	}
	assert.InDelta(t, float64(time.Millisecond), float64(a.Load()), float64(time.Microsecond))
	a.Store(0)
	assert.Zero(t, a.Load())
}

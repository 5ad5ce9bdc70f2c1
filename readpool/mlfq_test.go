package readpool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestLevelFor: the thresholds are where a task moves down, each the first
// step time of the next level.
func TestLevelFor(t *testing.T) {
	th := DefaultLevelThresholds()
	for _, c := range []struct {
		elapsed time.Duration
		want    int
	}{
		{0, 0}, {th[0] - 1, 0}, {th[0], 1}, {th[1] - 1, 1}, {th[1], 2}, {time.Hour, 2},
	} {
		assert.Equal(t, c.want, LevelFor(c.elapsed, th), "%v", c.elapsed)
	}
}

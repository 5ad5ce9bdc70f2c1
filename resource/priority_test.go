package resource

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPriority_StringAndValid(t *testing.T) {
	for _, c := range []struct {
		p     Priority
		s     string
		valid bool
	}{{PriorityLow, "low", true}, {PriorityMedium, "medium", true}, {PriorityHigh, "high", true}, {0, "priority(0)", false}, {3, "priority(3)", false}} {
		assert.Equal(t, c.s, c.p.String())
		assert.Equal(t, c.valid, c.p.Valid())
	}
	assert.Less(t, PriorityLow, PriorityMedium)
	assert.Less(t, PriorityMedium, PriorityHigh)
}

package resource

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPriority_JSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Priority
	}{{`"low"`, PriorityLow}, {`"HIGH"`, PriorityHigh}, {`"medium"`, PriorityMedium}, {`16`, PriorityHigh}, {`8`, PriorityMedium}, {`0`, 0}} {
		var p Priority
		require.NoError(t, json.Unmarshal([]byte(tc.in), &p), tc.in)
		assert.Equal(t, tc.want, p, tc.in)
	}
	for _, bad := range []string{`"urgent"`, `true`, `[1]`, `1.5`} {
		var p Priority
		assert.Error(t, json.Unmarshal([]byte(bad), &p), bad)
	}
	b, err := json.Marshal(GroupConfig{Name: "a", RUPerSec: 5, Priority: PriorityHigh})
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"a","ru_per_sec":5,"burstable":false,"priority":"high"}`, string(b))
	var back GroupConfig
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, PriorityHigh, back.Priority)
	// An out-of-class number decodes, and Put names it.
	require.NoError(t, json.Unmarshal([]byte(`{"name":"b","priority":3}`), &back))
	assert.ErrorIs(t, NewManager().Put(back), ErrInvalidGroup)
}

func TestParsePriority(t *testing.T) {
	p, err := ParsePriority(" Low ")
	require.NoError(t, err)
	assert.Equal(t, PriorityLow, p)
	_, err = ParsePriority("max")
	assert.ErrorIs(t, err, ErrInvalidGroup)
	assert.Contains(t, err.Error(), `"max"`)
}

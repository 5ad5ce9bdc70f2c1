package scan

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

func TestFirstBatchRows(t *testing.T) {
	assert.Equal(t, MinBatchRows, firstBatchRows(0), "unlimited: first rows soon")
	assert.Equal(t, MinBatchRows, firstBatchRows(5), "at least MinBatchRows")
	assert.Equal(t, 100, firstBatchRows(100), "a short scan in one batch")
	assert.Equal(t, MaxBatchRows, firstBatchRows(MaxBatchRows))
	assert.Equal(t, MinBatchRows, firstBatchRows(MaxBatchRows+1), "a long one grows as usual")
	assert.True(t, ShortLimit(1))
	assert.True(t, ShortLimit(MaxBatchRows))
	assert.False(t, ShortLimit(0))
	assert.False(t, ShortLimit(MaxBatchRows+1))
}

func TestSpawn_ShortScanRunsInlineInOneStep(t *testing.T) {
	db := openPebble(t, 5000, 8) // outside the bubble: Pebble's goroutines are not the test's
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, readpool.Options{Workers: 1})
		synctest.Wait() // the worker parked: its slot is free for the caller
		require.Equal(t, 1, p.Stats().Parked)

		c, err := NewCursor(db, Spec{Limit: 100})
		require.NoError(t, err)
		r, err := Spawn(context.Background(), p, c, readpool.SpawnOptions{})
		require.NoError(t, err)
		// The whole scan ran in Spawn, on this goroutine: the task has ended.
		select {
		case <-r.s.Finished():
		default:
			t.Fatal("a short scan's task was still running after Spawn returned")
		}
		st := p.Stats()
		assert.EqualValues(t, 1, st.Inline)
		assert.EqualValues(t, 1, st.Steps)
		b, err := r.Next()
		require.NoError(t, err)
		require.NotNil(t, b)
		assert.Equal(t, 100, b.Len(), "one batch")
		b, err = r.Next()
		require.NoError(t, err)
		assert.Nil(t, b)
		require.NoError(t, r.Close())

		// A scan without a limit is spawned for a worker: Spawn returns at once.
		c, err = NewCursor(db, Spec{})
		require.NoError(t, err)
		r, err = Spawn(context.Background(), p, c, readpool.SpawnOptions{})
		require.NoError(t, err)
		assert.EqualValues(t, 1, p.Stats().Inline)
		require.NoError(t, r.Close())
	})
}

func TestTask_WaitingIsTheConsumers(t *testing.T) {
	s := newStream(0)
	task := newTask(nil, s)
	assert.False(t, task.Waiting())
	s.mu.Lock()
	s.waiting = true
	s.mu.Unlock()
	assert.True(t, task.Waiting())
}

package kv

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// A read whose estimated wait exceeds its WithMaxQueueWait is refused at
// once with a *BusyError that says the estimate, while the worker is still
// held; one whose limit is generous queues as any other.
func TestWithMaxQueueWait_RefusesWithTheEstimate(t *testing.T) {
	db, release := openSaturated(t, Options{})
	ctx := context.Background()

	_, err := db.Get(WithMaxQueueWait(ctx, time.Millisecond), []byte("k"))
	require.ErrorIs(t, err, ErrBusy)
	var be *BusyError
	require.ErrorAs(t, err, &be)
	assert.Greater(t, be.EstimatedWait, time.Millisecond, "the worker is held: the estimate is not zero")
	assert.Contains(t, err.Error(), "estimated wait")

	it := db.Scan(WithMaxQueueWait(ctx, time.Millisecond), nil, nil, nil)
	assert.ErrorIs(t, it.Err(), ErrBusy, "scans too")
	require.NoError(t, it.Close())

	queued := make(chan error, 1)
	go func() {
		_, err := db.Get(WithMaxQueueWait(ctx, time.Hour), []byte("k"))
		queued <- err
	}()
	select {
	case err := <-queued:
		t.Fatalf("a read within its limit returned while the worker was held: %v", err)
	case <-time.After(10 * time.Millisecond):
	}
	release()
	assert.ErrorIs(t, <-queued, ErrNotFound, "it ran once the worker was free")

	w := db.Stats().Pool.Waits
	assert.EqualValues(t, 2, w.Refused)
	assert.EqualValues(t, 1, w.Started)
	assert.Zero(t, db.Stats().Pool.RejectedBusy, "no refusal for a full pool")
}

func TestWithMaxQueueWait_NoLimit(t *testing.T) {
	ctx := context.Background()
	assert.Zero(t, MaxQueueWaitFrom(ctx))
	assert.Equal(t, time.Second, MaxQueueWaitFrom(WithMaxQueueWait(ctx, time.Second)))
	assert.Zero(t, MaxQueueWaitFrom(WithMaxQueueWait(ctx, -time.Second)), "a negative limit is none")
}

func TestBusyError_Mapping(t *testing.T) {
	for _, c := range []struct {
		in   error
		wait time.Duration
		text string
	}{
		{readpool.ErrBusy, 0, "kv: busy"},
		{&readpool.BusyError{EstimatedWait: 5 * time.Millisecond}, 5 * time.Millisecond, "kv: busy: estimated wait 5ms"},
		{fmt.Errorf("part 3: %w", &readpool.BusyError{EstimatedWait: time.Second}), time.Second, "kv: busy: estimated wait 1s"},
	} {
		err := storeErr(c.in)
		var be *BusyError
		require.True(t, errors.As(err, &be), "%v", c.in)
		assert.ErrorIs(t, err, ErrBusy)
		assert.Equal(t, c.wait, be.EstimatedWait)
		assert.Equal(t, c.text, err.Error())
	}
}

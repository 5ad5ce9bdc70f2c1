package readpool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pendingOnce goes Pending in its first step, handing out its Waker and
// handle, and finishes in its second.
type pendingOnce struct {
	steps  int
	waker  chan Waker
	handle chan *Handle
	done   chan error
}

func newPendingOnce() *pendingOnce {
	return &pendingOnce{waker: make(chan Waker, 1), handle: make(chan *Handle, 1), done: make(chan error, 1)}
}

func (t *pendingOnce) Step(sc *StepContext) Status {
	t.steps++
	if t.steps == 1 {
		t.handle <- sc.h
		t.waker <- sc.Waker()
		return Pending
	}
	return Ready
}

func (t *pendingOnce) Done(err error) { t.done <- err }

// A Go task's handle is reused once the task ends. A Waker, or a context
// watch, kept from the ended task must not touch the task that reuses it.
func TestWaker_StaleAfterHandleReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, Options{Workers: 1})
		var stale Waker
		var old *Handle
		var b *pendingOnce
		for range 1000 { // sync.Pool may drop a handle (it does at random under -race)
			a := newPendingOnce()
			require.NoError(t, p.Go(context.Background(), a, SpawnOptions{}))
			old, stale = <-a.handle, <-a.waker
			stale.Wake()
			require.NoError(t, <-a.done)
			staleGen := stale.gen
			// Give the old task's cancel the chance to poison the next one.
			old.cancelGen(staleGen, errors.New("stale cancel"))

			b = newPendingOnce()
			require.NoError(t, p.Go(context.Background(), b, SpawnOptions{}))
			if <-b.handle == old {
				break
			}
			(<-b.waker).Wake()
			require.NoError(t, <-b.done)
			b = nil
		}
		require.NotNil(t, b, "the pool never reused a handle")
		fresh := <-b.waker
		synctest.Wait() // b is filed as waiting
		require.Equal(t, 1, p.Stats().Pending)

		stale.Wake()
		old.cancelGen(stale.gen, errors.New("stale cancel"))
		assert.Equal(t, 1, p.Stats().Pending, "the stale waker and cancel did nothing")
		assert.Equal(t, 1, b.steps)

		fresh.Wake()
		assert.NoError(t, <-b.done, "not cancelled by the old task's cancel")
		assert.Equal(t, 2, b.steps)
	})
}

func TestStepContext_HandleOfGoTaskIsNil(t *testing.T) {
	p := newPool(t, Options{Workers: 1})
	got := make(chan *Handle, 2)
	task, done := doneTask(func(sc *StepContext) Status { got <- sc.Handle(); return Ready })
	require.NoError(t, p.Go(context.Background(), task, SpawnOptions{}))
	require.NoError(t, <-done)
	assert.Nil(t, <-got, "Go tasks are woken through Waker only")
	h, err := p.Spawn(context.Background(), task, SpawnOptions{})
	require.NoError(t, err)
	require.NoError(t, <-done)
	assert.Same(t, h, <-got)
}

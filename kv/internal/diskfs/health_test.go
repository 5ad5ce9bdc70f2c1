package diskfs

import (
	"errors"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHealth_Transitions walks healthy → full ⇄ healthy → failed on a
// fake clock: each step is an input, and the state after it.
func TestHealth_Transitions(t *testing.T) {
	h, c, logs := newTestHealth()
	cause := errors.New("the WAL's write failed")
	steps := []struct {
		name string
		do   func()
		want error // Err's sentinel: nil, ErrFull or ErrFailed
		// warns and infos are the log lines so far: one per transition.
		warns, infos int
	}{
		{"a new store is healthy", func() {}, nil, 0, 0},
		{"a write meets ENOSPC: full", func() { h.markFull(syscall.ENOSPC) }, ErrFull, 1, 0},
		{"another: still full, not logged again", func() { h.markFull(syscall.ENOSPC) }, ErrFull, 1, 0},
		{"fullHold not over", func() { c.advance(fullHold - time.Nanosecond) }, ErrFull, 1, 0},
		{"a write reaches the disk: healthy", h.markWritten, nil, 1, 1},
		{"another: not logged again", h.markWritten, nil, 1, 1},
		{"ENOSPC again: full", func() { h.markFull(syscall.ENOSPC) }, ErrFull, 2, 1},
		{"half the hold", func() { c.advance(fullHold / 2) }, ErrFull, 2, 1},
		{"a new ENOSPC starts the hold again", func() { h.markFull(syscall.ENOSPC) }, ErrFull, 2, 1},
		{"the first hold would be over", func() { c.advance(fullHold / 2) }, ErrFull, 2, 1},
		{"fullHold over without a write: healthy, for the next write to find out", func() { c.advance(fullHold / 2) }, nil, 2, 1},
		{"full again, unlogged: no write cleared the mark", func() { h.markFull(syscall.ENOSPC) }, ErrFull, 2, 1},
		{"a failure: failed, over full", func() { h.Fail(cause) }, ErrFailed, 2, 1},
		{"a write that reaches the disk does not heal it", h.markWritten, ErrFailed, 2, 2},
		{"nor does time", func() { c.advance(time.Hour) }, ErrFailed, 2, 2},
		{"a second failure keeps the first cause, unlogged", func() { h.Fail(errors.New("later")) }, ErrFailed, 2, 2},
	}
	for _, s := range steps {
		s.do()
		err := h.Err()
		switch s.want {
		case nil:
			assert.NoError(t, err, s.name)
		case ErrFull:
			assert.ErrorIs(t, err, ErrFull, s.name)
			assert.ErrorIs(t, err, syscall.ENOSPC, s.name)
			assert.NotErrorIs(t, err, ErrFailed, s.name)
		case ErrFailed:
			assert.ErrorIs(t, err, ErrFailed, s.name)
			assert.ErrorIs(t, err, cause, s.name)
			assert.NotErrorIs(t, err, ErrFull, s.name)
		}
		assert.Equal(t, s.want == ErrFull, h.IsFull() && h.Cause() == nil, "%s: IsFull", s.name)
		assert.Equal(t, s.want == ErrFailed, h.FailedErr() != nil, "%s: FailedErr", s.name)
		select {
		case <-h.Failed():
			assert.Equal(t, ErrFailed, s.want, "%s: Failed is closed", s.name)
		default:
			assert.NotEqual(t, ErrFailed, s.want, "%s: Failed is open", s.name)
		}
		assert.Equal(t, s.warns, logs.count(slog.LevelWarn), "%s: warnings", s.name)
		assert.Equal(t, s.infos, logs.count(slog.LevelInfo), "%s: infos", s.name)
	}
	assert.Equal(t, 1, logs.count(slog.LevelError), "the failure is logged once")
	assert.Same(t, cause, h.Cause())
	assert.Empty(t, c.slept, "no transition waits")
}

// TestHealth_FullHold checks the hold's edge: full for fullHold after
// the last ENOSPC, not a nanosecond more.
func TestHealth_FullHold(t *testing.T) {
	h, c, _ := newTestHealth()
	h.markFull(syscall.ENOSPC)
	c.advance(fullHold - time.Nanosecond)
	assert.True(t, h.IsFull(), "within the hold")
	c.advance(time.Nanosecond)
	assert.False(t, h.IsFull(), "at its end")
	assert.NoError(t, h.Err())
}

// TestHealth_WaitForSpace checks the waits between tries of a WAL write
// that met ENOSPC: 1 ms doubling, at most FullPause, none once closing.
func TestHealth_WaitForSpace(t *testing.T) {
	h, c, _ := newTestHealth()
	for n := range 9 {
		require.True(t, h.waitForSpace(n), "try %d while open", n)
	}
	require.True(t, h.waitForSpace(1000), "a late try: the shift is bounded")
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, FullPause, FullPause, FullPause}, c.slept)

	c.slept = nil
	h.Close()
	h.Close() // twice: kv's Close and a failed Open's both may
	assert.False(t, h.waitForSpace(0), "closing ends the wait")
	assert.Empty(t, c.slept, "closing wins over a timer due too")
}

// TestHealth_Pause checks the hold on a table's failed write: FullPause,
// none once closing.
func TestHealth_Pause(t *testing.T) {
	h, c, _ := newTestHealth()
	h.pause()
	assert.Equal(t, []time.Duration{FullPause}, c.slept)
	h.Close()
	h.pause()
	assert.Equal(t, []time.Duration{FullPause}, c.slept, "no pause once closing")
}

// TestHealth_TakeDirSyncErr checks the failed sync kept for a Checkpoint:
// the first since the last take, taken once.
func TestHealth_TakeDirSyncErr(t *testing.T) {
	h, _, _ := newTestHealth()
	first, second := errors.New("first"), errors.New("second")
	assert.NoError(t, h.TakeDirSyncErr(), "none yet")
	_, err := h.apply(keep, kindOtherDir, opSync, first, 0)
	require.NoError(t, err, "kept, reported done")
	_, err = h.apply(keep, kindOtherDir, opSync, second, 0)
	require.NoError(t, err)
	assert.Same(t, first, h.TakeDirSyncErr(), "the first is kept")
	assert.NoError(t, h.TakeDirSyncErr(), "and taken once")
	assert.NoError(t, h.Err(), "a checkpoint's directory does not fail the store")
}

// TestHealth_Apply checks each action's effects and reply, on a healthy
// store.
func TestHealth_Apply(t *testing.T) {
	eio := syscall.EIO
	for _, tc := range []struct {
		a          action
		k          kind
		o          op
		err        error
		reply      reply
		wantErr    error
		failed     bool
		full       bool
		slept      []time.Duration
		closeFirst bool
	}{
		{a: pass, k: kindOther, o: opWrite, err: eio, reply: replyDisk, wantErr: eio},
		{a: wrote, k: kindOther, o: opWrite, reply: replyDisk},
		{a: drop, k: kindWAL, o: opWrite, err: eio, reply: replyDone},
		{a: void, k: kindWAL, o: opCreate, err: eio, reply: replyVoid, wantErr: eio},
		{a: fail, k: kindManifest, o: opWrite, err: eio, reply: replyDisk, wantErr: eio, failed: true},
		{a: failDrop, k: kindWAL, o: opWrite, err: eio, reply: replyDone, failed: true},
		{a: failVoid, k: kindWAL, o: opCreate, err: eio, reply: replyVoid, wantErr: eio, failed: true},
		{a: wait, k: kindWAL, o: opWrite, err: syscall.ENOSPC, reply: replyRetry, wantErr: syscall.ENOSPC, full: true, slept: []time.Duration{time.Millisecond}},
		{a: wait, k: kindWAL, o: opWrite, err: syscall.ENOSPC, reply: replyDone, full: true, failed: true, closeFirst: true},
		{a: wait, k: kindManifest, o: opCreate, err: syscall.ENOSPC, reply: replyDisk, wantErr: syscall.ENOSPC, full: true, failed: true, closeFirst: true},
		{a: full, k: kindWAL, o: opOpenRW, err: syscall.ENOSPC, reply: replyDisk, wantErr: syscall.ENOSPC, full: true},
		{a: fullPause, k: kindOther, o: opWrite, err: syscall.ENOSPC, reply: replyDisk, wantErr: syscall.ENOSPC, full: true, slept: []time.Duration{FullPause}},
		{a: paused, k: kindOther, o: opSync, err: eio, reply: replyDisk, wantErr: eio, slept: []time.Duration{FullPause}},
		{a: keep, k: kindOtherDir, o: opSync, err: eio, reply: replyDone},
	} {
		name := actionName(tc.a)
		if tc.closeFirst {
			name += ", closing"
		}
		h, c, _ := newTestHealth()
		if tc.closeFirst {
			h.Close()
		}
		r, err := h.apply(tc.a, tc.k, tc.o, tc.err, 0)
		assert.Equal(t, tc.reply, r, "%s: reply", name)
		assert.Equal(t, tc.wantErr, err, "%s: error", name)
		assert.Equal(t, tc.failed, h.Cause() != nil, "%s: failed", name)
		assert.Equal(t, tc.full, h.IsFull(), "%s: full", name)
		assert.Equal(t, tc.slept, c.slept, "%s: waits", name)
	}
}

// TestHealth_ApplyFrozen checks that refuse replies with the frozen error.
func TestHealth_ApplyFrozen(t *testing.T) {
	h, _, _ := newTestHealth()
	r, err := h.before(kindManifest, opWrite)
	require.Equal(t, replyDisk, r, "a healthy store runs it")
	require.NoError(t, err)
	cause := errors.New("the MANIFEST's sync failed")
	h.Fail(cause)
	r, err = h.before(kindManifest, opWrite)
	assert.Equal(t, replyFrozen, r)
	assert.ErrorIs(t, err, ErrFailed)
	assert.ErrorIs(t, err, cause)
	assert.Contains(t, err.Error(), "the disk is frozen since")
	r, err = h.before(kindWAL, opWrite)
	assert.Equal(t, replyDone, r, "the WAL's write is dropped")
	assert.NoError(t, err)
}

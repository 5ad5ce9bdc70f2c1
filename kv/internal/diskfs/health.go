package diskfs

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Health is the state an FS keeps for its store, shared with the store,
// which refuses writes by it. Every transition is in this file:
// healthy → full ⇄ healthy, and either → failed, for good.
type Health struct {
	// failed is the first unrecoverable write error, set once; failedCh
	// is closed after it is set, so a receiver from Failed sees it.
	failed   atomic.Pointer[error]
	failedCh chan struct{}
	// dirSyncErr is the first failed sync of a directory other than the
	// store's since the last TakeDirSyncErr (kindOtherDir).
	dirSyncErr atomic.Pointer[error]
	// fullAt is when a write last met ENOSPC (UnixNano of clock.now), 0
	// once a write has succeeded since: the disk counts as full for
	// fullHold after it. A markFull racing a markWritten may leave either:
	// the next write settles it.
	fullAt atomic.Int64
	// closed ends the waits for space, at Close.
	closed    chan struct{}
	closeOnce sync.Once
	log       *slog.Logger
	clock     clock
}

// clock is where Health reads the time and waits: the wall clock in
// production, a fake one in tests.
type clock struct {
	now   func() time.Time
	after func(d time.Duration) <-chan time.Time
}

var wallClock = clock{now: time.Now, after: time.After}

// fullHold is how long the disk counts as full after a write met ENOSPC.
const fullHold = time.Second

// FullPause is how long a table write that met ENOSPC waits before Pebble
// hears of it, and the longest wait between tries on the WAL; kv's Flush
// looks this often whether the disk is full.
const FullPause = 100 * time.Millisecond

// NewHealth returns the Health of a healthy disk, which logs its
// transitions to l.
func NewHealth(l *slog.Logger) *Health { return newHealth(l, wallClock) }

func newHealth(l *slog.Logger, c clock) *Health {
	return &Health{closed: make(chan struct{}), failedCh: make(chan struct{}), log: l, clock: c}
}

// Err is why writes are refused now: ErrFailed wrapping the cause, or
// ErrFull wrapping ENOSPC; nil when the disk takes writes.
func (h *Health) Err() error {
	if err := h.FailedErr(); err != nil {
		return err
	}
	if h.IsFull() {
		return fmt.Errorf("%w (%w)", ErrFull, syscall.ENOSPC)
	}
	return nil
}

// FailedErr is ErrFailed wrapping the failure's cause, or nil while the
// store has not failed.
func (h *Health) FailedErr() error {
	if c := h.Cause(); c != nil {
		return fmt.Errorf("%w: %w", ErrFailed, c)
	}
	return nil
}

// Cause is the failure's cause, or nil.
func (h *Health) Cause() error {
	if p := h.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// Failed is closed once the store has failed.
func (h *Health) Failed() <-chan struct{} { return h.failedCh }

// Fail fails the store with err; the first failure is kept and logged.
// kv calls it for Pebble's Fatalf, which a failed write reached.
func (h *Health) Fail(err error) {
	if h.failed.CompareAndSwap(nil, &err) {
		close(h.failedCh)
		h.log.Error("store failed: writes are refused until it is closed and reopened; reads go on", "error", err.Error())
	}
}

// TakeDirSyncErr returns and forgets the failed sync of a directory other
// than the store's: a Checkpoint's, which Pebble cannot be told of.
func (h *Health) TakeDirSyncErr() error {
	if p := h.dirSyncErr.Swap(nil); p != nil {
		return *p
	}
	return nil
}

// IsFull reports whether a write met ENOSPC less than fullHold ago and
// none has succeeded since.
func (h *Health) IsFull() bool {
	at := h.fullAt.Load()
	return at != 0 && h.clock.now().Sub(time.Unix(0, at)) < fullHold
}

// Close ends the waits for space: a WAL or MANIFEST write still waiting
// then fails the store.
func (h *Health) Close() { h.closeOnce.Do(func() { close(h.closed) }) }

// markFull notes a write that met ENOSPC.
func (h *Health) markFull(err error) {
	if h.fullAt.Swap(h.clock.now().UnixNano()) == 0 {
		h.log.Warn("disk full: writes are refused until space returns; reads go on", "error", err.Error())
	}
}

// markWritten notes a write that reached the disk.
func (h *Health) markWritten() {
	if h.fullAt.Load() != 0 && h.fullAt.Swap(0) != 0 {
		h.log.Info("disk space returned: writes are accepted again")
	}
}

// waitForSpace sleeps before try n+1 (n from 0) of a write that met
// ENOSPC, 1 ms doubling up to FullPause, and reports false once the store
// is closing.
func (h *Health) waitForSpace(n int) bool {
	return h.sleep(min(time.Millisecond<<min(n, 20), FullPause))
}

// pause holds a failed table write back before Pebble retries it.
func (h *Health) pause() { h.sleep(FullPause) }

// sleep waits d, or less once the store is closing; it reports whether
// the store is open. Closing wins over a timer that is due too.
func (h *Health) sleep(d time.Duration) bool {
	select {
	case <-h.closed:
		return false
	default:
	}
	select {
	case <-h.closed:
		return false
	case <-h.clock.after(d):
		return true
	}
}

// frozen is the error of a change to the directory after the failure.
func (h *Health) frozen() error {
	if c := h.Cause(); c != nil {
		return fmt.Errorf("%w: the disk is frozen since: %w", ErrFailed, c)
	}
	return nil
}

// before asks the policy about operation o on a file of kind k before it
// runs: replyDisk lets it run (always, while the store has not failed);
// replyFrozen comes with the error to return.
func (h *Health) before(k kind, o op) (reply, error) {
	if h.Cause() == nil {
		return replyDisk, nil
	}
	return h.apply(policy(k, o, classFrozen), k, o, nil, 0)
}

// after carries out the policy for operation o on a file of kind k that
// returned err on try n (from 0), and returns what its caller hears: the
// reply, and the error to return (nil for replyDone).
func (h *Health) after(k kind, o op, err error, n int) (reply, error) {
	return h.apply(policy(k, o, classOf(err)), k, o, err, n)
}

// apply carries out a, the policy's action for operation o on a file of
// kind k that met err.
func (h *Health) apply(a action, k kind, o op, err error, n int) (reply, error) {
	if a.effects&effWritten != 0 {
		h.markWritten()
	}
	if a.effects&effFull != 0 {
		h.markFull(err)
	}
	if a.effects&effWait != 0 && !h.waitForSpace(n) {
		a = policy(k, o, classErr) // closing: no space will come
	}
	if a.effects&effFail != 0 {
		h.Fail(err)
	}
	if a.effects&effPause != 0 {
		h.pause()
	}
	if a.effects&effKeep != 0 {
		h.dirSyncErr.CompareAndSwap(nil, &err)
	}
	switch a.reply {
	case replyDone:
		return replyDone, nil
	case replyFrozen:
		return replyFrozen, h.frozen()
	}
	return a.reply, err
}

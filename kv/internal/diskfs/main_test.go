package diskfs

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is a clock that moves only when told, or by what Health waits:
// its after records the wait, moves the time by it and is due at once. One
// goroutine at a time.
type fakeClock struct {
	t     time.Time
	slept []time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func (c *fakeClock) clock() clock {
	return clock{
		now: func() time.Time { return c.t },
		after: func(d time.Duration) <-chan time.Time {
			c.slept = append(c.slept, d)
			c.advance(d)
			ch := make(chan time.Time, 1)
			ch <- c.t
			return ch
		},
	}
}

// logCount is a slog.Handler that counts the records at each level.
type logCount struct {
	mu sync.Mutex
	n  map[slog.Level]int
}

func (l *logCount) Enabled(context.Context, slog.Level) bool { return true }

func (l *logCount) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == nil {
		l.n = map[slog.Level]int{}
	}
	l.n[r.Level]++
	return nil
}

func (l *logCount) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCount) WithGroup(string) slog.Handler      { return l }

func (l *logCount) count(level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[level]
}

// newTestHealth is a Health on a fake clock, its log lines counted.
func newTestHealth() (*Health, *fakeClock, *logCount) {
	c, logs := newFakeClock(), &logCount{}
	return newHealth(slog.New(logs), c.clock()), c, logs
}

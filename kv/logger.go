package kv

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/kv/internal/diskfs"
)

// pebbleLogger sends Pebble's log lines to the store's slog.Logger: its
// info lines ("Found 0 WALs") at Info, which the default logger drops, its
// errors at Error.
type pebbleLogger struct {
	l    *slog.Logger
	disk *diskfs.Health
}

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Info(fmt.Sprintf(format, args...), "source", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "source", "pebble")
}

// Fatalf is Pebble's report of an unrecoverable state. One that carries an
// error — a failed MANIFEST write, a commit whose WAL failed — is the
// disk's doing: it fails the store (writes refused, reads going on; see
// package diskfs) and returns, since a panic here, often on one of Pebble's
// background goroutines, would end the process. One after the store has
// failed is a consequence of that failure. Any other is a broken invariant
// of Pebble's, where going on could serve a wrong value: that one panics,
// as Pebble expects.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "source", "pebble", "fatal", true)
	for _, a := range args {
		if err, ok := a.(error); ok {
			p.disk.Fail(err)
			return
		}
	}
	if p.disk.Cause() != nil {
		return
	}
	panic("pebble: " + msg)
}

// eventListener routes the Pebble events an operator must hear of to l:
// failures of background work (a flush or compaction that failed leaves the
// store degraded while every call still succeeds), corruption, write stalls
// and a filling disk. Pebble's routine events (flushes, compactions, files
// created) are not logged.
func eventListener(l *slog.Logger) *pebble.EventListener {
	var logged sync.Map // the errors logged: each once
	return &pebble.EventListener{
		// A failed flush or compaction is retried, and a table that fails
		// its checksum fails every stats load: each distinct error is
		// logged once, its first line.
		BackgroundError: func(err error) {
			msg, _, _ := strings.Cut(err.Error(), "\n")
			if _, seen := logged.LoadOrStore(msg, true); !seen {
				l.Error("pebble background error", "source", "pebble", "error", msg)
			}
		},
		// Pebble's default would call Logger.Fatalf; the read that met the
		// corruption returns ErrCorrupt of its own. Pebble reports it at
		// every read that meets it: one line per file and problem, its
		// first line (the rest is a stack trace).
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			msg, _, _ := strings.Cut(info.Details.Error(), "\n")
			if _, seen := logged.LoadOrStore(info.Path+"\x00"+msg, true); !seen {
				l.Error("pebble data corruption", "source", "pebble", "path", info.Path, "error", msg)
			}
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			l.Warn("slow disk operation", "source", "pebble", "op", info.OpType.String(), "path", info.Path, "duration", info.Duration)
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			l.Warn("pebble write stall", "source", "pebble", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			l.Info("pebble write stall ended", "source", "pebble")
		},
		LowDiskSpace: func(info pebble.LowDiskSpaceInfo) {
			l.Warn("pebble low disk space", "source", "pebble", "detail", info.String())
		},
		PossibleAPIMisuse: func(info pebble.PossibleAPIMisuseInfo) {
			l.Warn("pebble possible API misuse", "source", "pebble", "detail", info.String())
		},
	}
}

// defaultLogger is the logger of a store opened without one: warnings and
// errors go to slog.Default() — a failing store must not be silent — and
// Pebble's routine info lines are dropped.
func defaultLogger() *slog.Logger {
	return slog.New(minLevel{min: slog.LevelWarn, h: slog.Default().Handler()})
}

// minLevel passes on the records of h at min or above.
type minLevel struct {
	min slog.Level
	h   slog.Handler
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}

func (m minLevel) Handle(ctx context.Context, r slog.Record) error { return m.h.Handle(ctx, r) }

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{min: m.min, h: m.h.WithAttrs(as)}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{min: m.min, h: m.h.WithGroup(name)}
}

package kv

import (
	"fmt"
	"log/slog"
)

// pebbleLogger sends Pebble's log lines to the store's slog.Logger, so
// Pebble prints nothing ("Found 0 WALs") unless the embedding program asks.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Info(fmt.Sprintf(format, args...), "source", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "source", "pebble")
}

// Fatalf is Pebble's report of an unrecoverable state: log it, then panic,
// since Pebble does not expect the call to return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "source", "pebble", "fatal", true)
	panic("pebble: " + msg)
}

package tikv

import (
	"context"
	"log/slog"
	"sync"

	"github.com/pingcap/log"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// client-go logs through pingcap/log's process-wide zap logger, at INFO
// by default, to stderr. The first store replaces it, once, by one whose
// core hands records to the most recently opened store's Options.Logger
// (nothing while no store is open).

var logs struct {
	once  sync.Once
	mu    sync.Mutex
	sinks []*logSink // open stores', in order of opening
}

// logSink is one store's place in the list of loggers.
type logSink struct {
	logger *slog.Logger
	min    slog.Level
}

// installLogger makes o's logger the one client-go's records go to, until
// remove.
func installLogger(o Options) *logSink {
	logs.once.Do(func() {
		l := zap.New(slogCore{})
		log.ReplaceGlobals(l, &log.ZapProperties{Core: l.Core(), Syncer: zapcore.AddSync(discard{}), Level: zap.NewAtomicLevelAt(zap.DebugLevel)})
	})
	s := &logSink{logger: o.Logger, min: slog.LevelWarn}
	if o.VerboseClientLogs {
		s.min = slog.LevelInfo
	}
	logs.mu.Lock()
	logs.sinks = append(logs.sinks, s)
	logs.mu.Unlock()
	return s
}

// remove takes s out of the list; idempotent.
func (s *logSink) remove() {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for i, x := range logs.sinks {
		if x == s {
			logs.sinks = append(logs.sinks[:i], logs.sinks[i+1:]...)
			return
		}
	}
}

// current is the sink client-go's records go to now; nil when none.
func current() *logSink {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.sinks) == 0 {
		return nil
	}
	return logs.sinks[len(logs.sinks)-1]
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// slogCore is a zapcore.Core that writes to the current sink's slog
// logger.
type slogCore struct {
	fields []zapcore.Field
}

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

func (c slogCore) Enabled(l zapcore.Level) bool {
	s := current()
	return s != nil && slogLevel(l) >= s.min
}

func (c slogCore) With(fields []zapcore.Field) zapcore.Core {
	return slogCore{fields: append(append([]zapcore.Field(nil), c.fields...), fields...)}
}

func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	s := current()
	if s == nil || slogLevel(e.Level) < s.min {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	attrs = append(attrs, slog.String("source", "client-go"))
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	s.logger.LogAttrs(context.Background(), slogLevel(e.Level), e.Message, attrs...)
	return nil
}

func (c slogCore) Sync() error { return nil }

package kv

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/kv/internal/diskfs"
)

func TestOpen_NewStoreAtNewestFormat(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, nil)
	require.NoError(t, err)
	assert.Equal(t, pebble.FormatNewest, db.pdb.FormatMajorVersion())
	require.NoError(t, db.Close())
}

func TestOpen_OlderFormatStoreStillOpens(t *testing.T) {
	dir := t.TempDir()
	old := pebble.FormatMinSupported
	require.Less(t, old, pebble.FormatNewest, "the test needs a format older than the newest")
	pdb, err := pebble.Open(dir, &pebble.Options{FormatMajorVersion: old, Logger: pebbleLogger{slog.New(slog.DiscardHandler), diskfs.NewHealth(slog.New(slog.DiscardHandler))}})
	require.NoError(t, err)
	require.NoError(t, pdb.Set([]byte("k"), []byte("v"), pebble.Sync))
	require.NoError(t, pdb.Flush())
	require.NoError(t, pdb.Set([]byte("wal"), []byte("only in the WAL"), pebble.Sync))
	require.NoError(t, pdb.Close())

	db := openTest(t, dir, nil)
	assert.Equal(t, old, db.pdb.FormatMajorVersion(), "Open does not raise an existing store's format")
	for k, want := range map[string]string{"k": "v", "wal": "only in the WAL"} {
		v, err := db.Get(context.Background(), []byte(k))
		require.NoError(t, err)
		assert.Equal(t, want, string(v))
	}
	require.NoError(t, db.Set([]byte("new"), []byte("x")))
}

// levelRecorder is a slog handler that keeps every record it is given.
type levelRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *levelRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *levelRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelRecorder) WithGroup(string) slog.Handler      { return h }

func (h *levelRecorder) levels() map[string]slog.Level {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]slog.Level{}
	for _, r := range h.records {
		m[r.Message] = r.Level
	}
	return m
}

func TestEventListener_RoutesPebbleEvents(t *testing.T) {
	rec := &levelRecorder{}
	el := eventListener(slog.New(rec))
	el.BackgroundError(errors.New("compaction failed"))
	el.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	el.WriteStallEnd()
	el.DiskSlow(pebble.DiskSlowInfo{Path: "000001.log"})
	el.DataCorruption(pebble.DataCorruptionInfo{Path: "000002.sst", Details: errors.New("bad block")})
	el.LowDiskSpace(pebble.LowDiskSpaceInfo{AvailBytes: 1, TotalBytes: 100, PercentThreshold: 5})
	assert.Equal(t, map[string]slog.Level{
		"pebble background error":  slog.LevelError,
		"pebble write stall":       slog.LevelWarn,
		"pebble write stall ended": slog.LevelInfo,
		"slow disk operation":      slog.LevelWarn,
		"pebble data corruption":   slog.LevelError,
		"pebble low disk space":    slog.LevelWarn,
	}, rec.levels())
}

// TestOpen_DefaultLoggerIsNotSilent swaps slog's default logger, which no
// other test of the package touches, and restores it.
func TestOpen_DefaultLoggerIsNotSilent(t *testing.T) {
	rec := &levelRecorder{}
	prev := slog.Default()
	slog.SetDefault(slog.New(rec))
	t.Cleanup(func() { slog.SetDefault(prev) })

	db := openTest(t, t.TempDir(), nil) // on disk: Pebble logs its WAL recovery
	require.NoError(t, db.Set([]byte("k"), []byte("v")))
	require.NoError(t, db.Flush())
	assert.Empty(t, rec.levels(), "Pebble's info lines are dropped")

	l := db.Options().Logger
	require.NotNil(t, l)
	l.Info("routine")
	l.Warn("stalled")
	l.Error("failed")
	eventListener(l).BackgroundError(errors.New("compaction failed"))
	assert.Equal(t, map[string]slog.Level{
		"stalled":                 slog.LevelWarn,
		"failed":                  slog.LevelError,
		"pebble background error": slog.LevelError,
	}, rec.levels(), "warnings and errors reach slog.Default()")
}

func TestMemTableSize_FollowsTheBlockCache(t *testing.T) {
	for _, tc := range []struct {
		cache int64
		want  uint64
	}{
		{1 << 20, 4 << 20},  // a small cache keeps Pebble's default
		{64 << 20, 8 << 20}, // the default cache: an eighth
		{256 << 20, 32 << 20},
		{1 << 30, 64 << 20}, // capped
	} {
		assert.Equal(t, tc.want, memTableSize(tc.cache), "cache %d", tc.cache)
		// Even with every memtable allowed queued, they take at most half
		// the cache once it is past the floor.
		if tc.cache >= 64<<20 {
			assert.LessOrEqual(t, memTables*tc.want, uint64(tc.cache)/2)
		}
	}
}

// TestOpen_RowCacheFailureLeaksNothing: when the row cache cannot be built,
// Open fails and closes all it opened — Pebble, and the disk-health
// checker of the operating system's filesystem — and the directory opens
// again.
func TestOpen_RowCacheFailureLeaksNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	buildRowCache = func(int64) (*rowCache, error) { return nil, errors.New("no memory today") }
	_, err := Open(dir, nil)
	buildRowCache = newRowCache
	require.ErrorContains(t, err, "row cache: no memory today")
	db, err := Open(dir, nil)
	require.NoError(t, err, "the lock was let go")
	require.NoError(t, db.Close())
}

package kv

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// The corruption tests flip bytes in each kind of file of a store on a
// real directory, then open it and read everything: every read gives the
// right value or an error matching ErrCorrupt, Open succeeds or fails
// with a clear error, nothing panics, and Check finds every flipped table.

const corruptKeys = 3_000

// corruptStore writes corruptKeys rows into a new store in dir, flushed
// into tables, and a tail of unflushed writes in the WAL; it returns the
// rows by key.
func corruptStore(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	db, err := Open(dir, &Options{Logger: faultsLogger(), NoSync: true})
	require.NoError(t, err)
	want := map[string][]byte{}
	b := db.NewBatch()
	for i := range corruptKeys {
		k, v := faultsKey(i), faultsRow(t, i)
		b.Set(k, v)
		want[string(k)] = v
		if i%500 == 499 {
			require.NoError(t, db.Apply(b))
			b.Reset()
		}
		if i == corruptKeys-200 {
			require.NoError(t, db.Apply(b))
			b.Reset()
			require.NoError(t, db.Flush())
		}
	}
	require.NoError(t, db.Apply(b))
	require.NoError(t, db.Close())
	return want
}

// flip inverts the byte at off (from the end when negative) of path.
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	if off < 0 {
		off += int64(len(data))
	}
	require.Less(t, off, int64(len(data)))
	data[off] ^= 0xff
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// filesLike returns the files of dir whose names match pattern, sorted.
func filesLike(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	require.NoError(t, err)
	sort.Strings(m)
	return m
}

// copyDir copies the store in src into a new directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644))
	}
	return dst
}

func TestCorrupt_ByteFlips(t *testing.T) {
	base := t.TempDir()
	want := corruptStore(t, base)
	tables := filesLike(t, base, "*.sst")
	require.NotEmpty(t, tables)
	wals := filesLike(t, base, "*.log")
	require.NotEmpty(t, wals)
	st, err := os.Stat(tables[0])
	require.NoError(t, err)
	size := st.Size()

	cases := []struct {
		name    string
		pattern string
		off     int64
		table   bool // Check must find it
	}{
		{"table-data-block-first", "*.sst", 20, true},
		{"table-data-block-middle", "*.sst", size / 3, true},
		// The end of a table holds its index, its properties and metaindex,
		// and the footer (the last 53 bytes or so).
		{"table-index-or-meta", "*.sst", -200, true},
		{"table-footer", "*.sst", -10, true},
		{"wal-middle", "*.log", -2000, false},
		{"wal-tail", "*.log", -5, false},
		{"manifest", "MANIFEST-*", 40, false},
		{"options", "OPTIONS-*", 100, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, base)
			files := filesLike(t, dir, c.pattern)
			require.NotEmpty(t, files)
			target := files[len(files)-1] // the newest: the live WAL and MANIFEST
			flip(t, target, c.off)
			logs := &lockedBuffer{}
			db, err := Open(dir, &Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), CacheSize: 1 << 20, RowCacheSize: -1})
			if err != nil {
				t.Logf("Open: %v", err)
				assert.True(t, strings.HasPrefix(err.Error(), "kv: open "), "a clear error: %v", err)
				return
			}
			defer func() { _ = db.Close() }()
			corruptReads(t, db, want)
			_, err = db.Check(t.Context())
			if c.table {
				require.Error(t, err, "Check finds the flipped table")
				assert.ErrorIs(t, err, ErrCorrupt)
				assert.Contains(t, err.Error(), strings.TrimSuffix(filepath.Base(target), ".sst"), "the error names the file")
				assert.NotContains(t, err.Error(), "\n", "one line")
			}
			t.Logf("Check: %v", err)
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if strings.Contains(line, "corrupt") {
					assert.NotContains(t, line, "goroutine", "no stack in the log")
				}
			}
			assert.LessOrEqual(t, strings.Count(logs.String(), "\n"), 20, "the log stays short:\n%s", logs.String())
		})
	}
}

// TestCorrupt_DamagedFilesAtOpen truncates or removes the files Open
// needs: Open fails with an error that names the store and the file,
// ErrCorrupt where the damage is corruption, and never panics; or it
// opens, and then every read is right or ErrCorrupt.
func TestCorrupt_DamagedFilesAtOpen(t *testing.T) {
	base := t.TempDir()
	want := corruptStore(t, base)
	cases := []struct {
		name    string
		pattern string
		damage  func(t *testing.T, path string)
		corrupt bool // Open must fail with ErrCorrupt
		opens   bool // Open must succeed
	}{
		{"table-missing", "*.sst", func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, true, false},
		{"table-truncated", "*.sst", func(t *testing.T, p string) { truncate(t, p, 0.5) }, true, false},
		{"table-empty", "*.sst", func(t *testing.T, p string) { truncate(t, p, 0) }, true, false},
		{"manifest-missing", "MANIFEST-*", func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, true, false},
		{"manifest-truncated", "MANIFEST-*", func(t *testing.T, p string) { truncate(t, p, 0.5) }, false, true},
		{"manifest-record-flipped", "MANIFEST-*", func(t *testing.T, p string) { flip(t, p, 12) }, true, false},
		{"wal-truncated", "*.log", func(t *testing.T, p string) { truncate(t, p, 0.5) }, false, true},
		{"options-missing", "OPTIONS-*", func(t *testing.T, p string) { require.NoError(t, os.Remove(p)) }, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, base)
			files := filesLike(t, dir, c.pattern)
			require.NotEmpty(t, files)
			target := files[len(files)-1]
			c.damage(t, target)
			db, err := Open(dir, &Options{Logger: faultsLogger(), RowCacheSize: -1})
			t.Logf("Open: %v", err)
			if err != nil {
				require.False(t, c.opens, "Open failed: %v", err)
				assert.True(t, strings.HasPrefix(err.Error(), "kv: open "+dir), "the error names the store: %v", err)
				if c.corrupt {
					assert.ErrorIs(t, err, ErrCorrupt)
				}
				assert.NotContains(t, err.Error(), "\n", "one line")
				return
			}
			defer func() { _ = db.Close() }()
			require.True(t, c.opens, "Open of a store with %s succeeded", c.name)
			corruptReads(t, db, want)
		})
	}
}

// truncate cuts path to frac of its size.
func truncate(t *testing.T, path string, frac float64) {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(path, int64(float64(st.Size())*frac)))
}

// corruptReads reads every key by Get, MultiGet, Scan and the coprocessor:
// each answer is right or ErrCorrupt.
func corruptReads(t *testing.T, db *DB, want map[string][]byte) {
	t.Helper()
	ctx := t.Context()
	var corrupt, missing, gets int
	// Every third key: a failed Get costs Pebble an error with its stack
	// (~7 ms each under -race), and the corrupt blocks hold dozens of keys.
	for i := 0; i < corruptKeys; i += 3 {
		gets++
		k := faultsKey(i)
		v, err := db.Get(ctx, k)
		if err != nil {
			if !errors.Is(err, ErrNotFound) {
				require.ErrorIs(t, err, ErrCorrupt, "Get %s", k)
				corrupt++
			} else {
				missing++ // a flipped WAL loses what follows the flip
			}
			continue
		}
		require.True(t, bytes.Equal(want[string(k)], v), "Get %s: a wrong value", k)
	}
	keys := make([][]byte, 0, corruptKeys)
	for i := range corruptKeys {
		keys = append(keys, faultsKey(i))
	}
	vals, err := db.MultiGet(ctx, keys)
	if err != nil {
		require.ErrorIs(t, err, ErrCorrupt, "MultiGet")
	} else {
		for i, v := range vals {
			if v != nil {
				require.True(t, bytes.Equal(want[string(keys[i])], v), "MultiGet %s: a wrong value", keys[i])
			}
		}
	}
	it := db.Scan(ctx, nil, nil, nil)
	for it.Next() {
		require.True(t, bytes.Equal(want[string(it.Key())], it.Value()), "Scan %s: a wrong value", it.Key())
	}
	if err := it.Err(); err != nil {
		require.ErrorIs(t, err, ErrCorrupt, "Scan")
	}
	require.NoError(t, it.Close())
	_, err = db.Coprocessor(ctx, &coproc.Request{Ranges: []coproc.KeyRange{{}}, Aggs: []coproc.Agg{{Func: "count"}}})
	if err != nil {
		require.ErrorIs(t, err, ErrCorrupt, "Coprocessor")
	}
	// Through a snapshot: the same answers.
	snap, err := db.NewSnapshot(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, snap.Close()) }()
	for i := 0; i < len(keys); i += 10 { // a sample: Get did them all
		k := keys[i]
		v, err := snap.Get(ctx, k)
		switch {
		case errors.Is(err, ErrNotFound):
		case err != nil:
			require.ErrorIs(t, err, ErrCorrupt, "snapshot Get %s", k)
		default:
			require.True(t, bytes.Equal(want[string(k)], v), "snapshot Get %s: a wrong value", k)
		}
	}
	sit := snap.Scan(ctx, nil, nil, nil)
	for sit.Next() {
		require.True(t, bytes.Equal(want[string(sit.Key())], sit.Value()), "snapshot Scan %s: a wrong value", sit.Key())
	}
	if err := sit.Err(); err != nil {
		require.ErrorIs(t, err, ErrCorrupt, "snapshot Scan")
	}
	require.NoError(t, sit.Close())
	t.Logf("of %d Gets: %d ErrCorrupt, %d not found", gets, corrupt, missing)
}

// lockedBuffer is a log's destination, written from Pebble's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

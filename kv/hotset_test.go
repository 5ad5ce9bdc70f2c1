package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHotSet_Codec(t *testing.T) {
	hs := hotSet{
		tables: []hotTable{{fileNum: 7, size: 1 << 20, read: 4096}, {fileNum: 1 << 40, size: 1, read: 0}},
		keys:   [][]byte{[]byte("a"), bytes.Repeat([]byte("k"), 300)},
	}
	b := encodeHotSet(hs)
	got, err := decodeHotSet(b)
	require.NoError(t, err)
	assert.Equal(t, hs, got)
	got, err = decodeHotSet(encodeHotSet(hotSet{}))
	require.NoError(t, err)
	assert.Empty(t, got.tables)
	assert.Empty(t, got.keys)

	// Version 1, before the row cache's keys, still reads.
	v1 := append([]byte(hotSetMagic), 1, 1, 7, 10, 5)
	v1 = binary.LittleEndian.AppendUint32(v1, crc32.Checksum(v1, crcTable))
	got, err = decodeHotSet(v1)
	require.NoError(t, err)
	assert.Equal(t, hotSet{tables: []hotTable{{fileNum: 7, size: 10, read: 5}}}, got)

	resum := func(body []byte) []byte {
		return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, crcTable))
	}
	body := b[:len(b)-4]
	flipped := bytes.Clone(b)
	flipped[len(hotSetMagic)+3] ^= 1
	for name, bad := range map[string][]byte{
		"empty":             nil,
		"another file":      []byte("MANIFEST-000001 and more bytes"),
		"a flipped bit":     flipped,
		"truncated":         b[:len(b)-6],
		"a version ahead":   resum(append([]byte(hotSetMagic), hotSetVersion+1, 0, 0)),
		"version 0":         resum(append([]byte(hotSetMagic), 0, 0, 0)),
		"a key cut":         resum(append([]byte(hotSetMagic), hotSetVersion, 0, 1, 5, 'a', 'b')),
		"an empty key":      resum(append([]byte(hotSetMagic), hotSetVersion, 0, 1, 0)),
		"too many keys":     resum(append([]byte(hotSetMagic), hotSetVersion, 0, 9, 1, 'a')),
		"a table cut":       resum(bytes.Clone(body[:len(body)-1])),
		"trailing bytes":    resum(append(bytes.Clone(body), 0)),
		"a count too large": resum(binary.AppendUvarint(append([]byte(hotSetMagic), 1), maxHotTables+1)),
	} {
		_, err := decodeHotSet(bad)
		assert.ErrorIs(t, err, errHotSetCorrupt, name)
	}
}

func TestHotSet_HottestFirst(t *testing.T) {
	tables := []hotTable{
		{fileNum: 1, size: 100, read: 10},
		{fileNum: 2, size: 100, read: 100},
		{fileNum: 3, size: 1000, read: 100},
		{fileNum: 4, size: 10, read: 10},
	}
	hottestFirst(tables)
	var order []uint64
	for _, t := range tables {
		order = append(order, t.fileNum)
	}
	assert.Equal(t, []uint64{2, 4, 3, 1}, order, "by the share read, then the bytes (1 and 3: a tenth each)")
}

// logTo returns a logger writing every level to buf.
func logTo(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// missesReading returns the block-cache misses of a Get of each of n keys.
func missesReading(t *testing.T, db *DB, n int) int64 {
	t.Helper()
	before := db.Stats().Storage.BlockCacheMisses
	for i := range n {
		_, err := db.Get(context.Background(), fmt.Appendf(nil, "k%06d", i))
		require.NoError(t, err)
	}
	return db.Stats().Storage.BlockCacheMisses - before
}

// TestHotSet_RestartWarmsWhatWasCached: a store closed with its table in
// the block cache saves it in its hot set; reopened, it warms it before
// any read, so Gets of every key miss nothing. Without the file they miss.
func TestHotSet_RestartWarmsWhatWasCached(t *testing.T) {
	const n = 3000
	fs := vfs.NewMem()
	o := Options{FS: fs, RowCacheSize: -1, CacheSize: 256 << 20}
	db, ended := warmOpen(t, o)
	writeKeys(t, db, n, 100)
	require.NoError(t, db.Flush())
	waitTurn(t, db, ended, warmGo)
	require.NoError(t, db.Close())
	_, err := fs.Stat(fs.PathJoin("coopkv", hotSetName))
	require.NoError(t, err, "Close saved the hot set")

	db, ended = warmOpen(t, o)
	waitTurn(t, db, ended, warmGo)
	st := db.Stats().Warm
	assert.EqualValues(t, 1, st.HotSetTables)
	assert.EqualValues(t, 1, st.HotSetQueued)
	assert.Positive(t, st.HotSetWarmedIn)
	assert.EqualValues(t, n, st.Keys)
	assert.Zero(t, missesReading(t, db, n), "the restart warmed every block")
	require.NoError(t, db.Close())

	require.NoError(t, fs.Remove(fs.PathJoin("coopkv", hotSetName)))
	var log bytes.Buffer
	o.Logger = logTo(&log)
	db, _ = warmOpen(t, o)
	assert.Positive(t, missesReading(t, db, n), "no hot set, no warming")
	assert.Contains(t, log.String(), "no hot set to warm")
	assert.Zero(t, db.Stats().Warm.HotSetTables)
}

// TestHotSet_DamagedOrStaleIsIgnored: a hot-set file that is not one, or
// that names tables the store no longer has, opens the store as if there
// were none, with a log line; a store without the warmer leaves it alone.
func TestHotSet_DamagedOrStaleIsIgnored(t *testing.T) {
	for _, c := range []struct {
		name    string
		content []byte
		log     string
		listed  int64
	}{
		{"garbage", []byte("not a hot set at all"), "hot set ignored", 0},
		{"a flipped bit", func() []byte {
			b := encodeHotSet(hotSet{tables: []hotTable{{fileNum: 5, size: 10, read: 10}}})
			b[len(hotSetMagic)+2] ^= 0x40
			return b
		}(), "checksum mismatch", 0},
		{"stale", encodeHotSet(hotSet{tables: []hotTable{{fileNum: 999999, size: 10, read: 10}}}), "tables gone since it was saved", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewMem()
			var log bytes.Buffer
			db := openTest(t, "", &Options{FS: fs, Logger: logTo(&log), slowRead: time.Hour})
			require.NoError(t, db.Set([]byte("k"), []byte("v")))
			require.NoError(t, db.Flush())
			require.NoError(t, db.Close())

			f, err := fs.Create(fs.PathJoin("coopkv", hotSetName), vfs.WriteCategoryUnspecified)
			require.NoError(t, err)
			_, err = f.Write(c.content)
			require.NoError(t, err)
			require.NoError(t, f.Close())

			db = openTest(t, "", &Options{FS: fs, Logger: logTo(&log), slowRead: time.Hour})
			v, err := db.Get(context.Background(), []byte("k"))
			require.NoError(t, err)
			assert.Equal(t, "v", string(v))
			st := db.Stats().Warm
			assert.Equal(t, c.listed, st.HotSetTables)
			assert.Zero(t, st.HotSetQueued)
			assert.Contains(t, log.String(), c.log)
		})
	}
}

// TestHotSet_RestartRefillsTheRowCache: the keys the row cache held at
// Close are read back into it after Open, so their first Gets are hits;
// keys it did not hold are not.
func TestHotSet_RestartRefillsTheRowCache(t *testing.T) {
	fs := vfs.NewMem()
	o := Options{FS: fs, CacheSize: 256 << 20}
	db, _ := warmOpen(t, o)
	writeKeys(t, db, 100, 100)
	require.NoError(t, db.Flush())
	ctx := context.Background()
	for range 2 { // cached from the second miss, or the first read after a write
		for i := range 10 {
			_, err := db.Get(ctx, fmt.Appendf(nil, "k%06d", i))
			require.NoError(t, err)
		}
	}
	db.cache.c.Wait()
	require.Len(t, db.cache.keys(maxHotKeyBytes), 10)
	require.NoError(t, db.Close())

	db, _ = warmOpen(t, o)
	waitWarm(t, db, func(w WarmStats) bool { return w.RowsRead == 10 })
	db.cache.c.Wait()
	st := db.Stats()
	assert.EqualValues(t, 10, st.Warm.HotSetRows)
	assert.EqualValues(t, 10, st.Warm.RowsCached)
	for i := range 10 {
		v, err := db.Get(ctx, fmt.Appendf(nil, "k%06d", i))
		require.NoError(t, err)
		assert.Len(t, v, 100)
	}
	_, err := db.Get(ctx, []byte("k000050"))
	require.NoError(t, err)
	after := db.Stats().RowCache
	assert.Equal(t, st.RowCache.Hits+10, after.Hits, "the saved keys' first Gets hit")
	assert.Equal(t, st.RowCache.Misses+1, after.Misses, "a key not saved misses")
}

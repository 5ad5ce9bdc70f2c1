package kv

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv/internal/diskfs"
)

// TestWAL_SpaceFollowsItsWrites: the blocks a store's write-ahead logs hold
// on the disk are what they have written, and a chunk: Pebble asks for
// 110% of a memtable at each log's first write (70 MiB each with a 64 MiB
// memtable, and a store written to keeps several logs), which a store of a
// few megabytes held for ever in blocks its files' sizes do not show.
func TestWAL_SpaceFollowsItsWrites(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, &Options{CacheSize: 512 << 20, NoSweep: true}) // 64 MiB memtables
	require.EqualValues(t, 64<<20, db.Stats().Storage.MemTableSize)
	val := make([]byte, 1000)
	for i := range 4000 { // ~4 MiB: the first memtables, 256 KiB and up, each on a log of its own
		require.NoError(t, db.Set(fmt.Appendf(nil, "k%06d", i), val))
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	require.NoError(t, err)
	require.Greater(t, len(logs), 1, "the memtable has grown through several logs")
	for _, name := range logs {
		var st syscall.Stat_t
		require.NoError(t, syscall.Stat(name, &st))
		fi, err := os.Stat(name)
		require.NoError(t, err)
		assert.LessOrEqual(t, st.Blocks*512, fi.Size()+2*diskfs.WALChunk, "%s: blocks held against bytes written", filepath.Base(name))
	}
}

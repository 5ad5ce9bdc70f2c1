package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

func TestStats(t *testing.T) {
	dir := newStore(t, func(db *kv.DB) {
		for i := range 1000 {
			require.NoError(t, db.Set(key(i), make([]byte, 100)))
		}
		require.NoError(t, db.Flush())
	})
	st := decode[storeStats](t, kvctl(t, "stats", "--dir", dir, "--json").ok(t))
	assert.Equal(t, dir, st.Dir)
	require.Len(t, st.Storage.Levels, 7)
	var tables, bytes int64
	for i, l := range st.Storage.Levels {
		assert.Equal(t, i, l.Level)
		tables += l.Tables
		bytes += l.Bytes
	}
	assert.Positive(t, tables)
	assert.Positive(t, bytes)
	assert.GreaterOrEqual(t, int64(st.Storage.DiskBytes), bytes)

	out := kvctl(t, "stats", "--dir", dir).ok(t)
	assert.Contains(t, out, "LEVEL")
	assert.Contains(t, out, "L0")
	assert.Contains(t, out, "total")
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.00 KiB", 1536: "1.50 KiB", 1000 * 1024: "1000 KiB",
		10 << 20: "10.0 MiB", 5 << 40: "5.00 TiB",
	} {
		assert.Equal(t, want, size(n), "%d", n)
	}
}

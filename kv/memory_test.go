package kv

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
)

func TestDefaultCacheSize_AQuarterWithinBounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit int64
		want  int64
	}{
		{"unknown", 0, 64 << 20},
		{"small container", 128 << 20, 64 << 20},
		{"2 GiB container", 2 << 30, 512 << 20},
		{"24 GiB machine", 24 << 30, 6 << 30},
		{"big machine", 512 << 30, 8 << 30},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, defaultCacheSize(c.limit))
		})
	}
}

func TestMemoryLimit_Cgroups(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name     string
		files    map[string]string
		physical int64
		want     int64
	}{
		{"no cgroup files: physical", nil, 24 * gib, 24 * gib},
		{"nothing readable", nil, 0, 0},
		{
			"v2 limit on the process's cgroup",
			map[string]string{
				"proc/self/cgroup":                 "0::/app/svc\n",
				"sys/fs/cgroup/app/svc/memory.max": "2147483648\n",
				"sys/fs/cgroup/app/memory.max":     "max\n",
			},
			24 * gib, 2 * gib,
		},
		{
			"v2 limit on an ancestor is tighter",
			map[string]string{
				"proc/self/cgroup":                 "0::/app/svc\n",
				"sys/fs/cgroup/app/svc/memory.max": "max\n",
				"sys/fs/cgroup/app/memory.max":     "1073741824\n",
			},
			24 * gib, 1 * gib,
		},
		{
			"v1 unlimited: physical",
			map[string]string{
				"proc/self/cgroup": "9:name=systemd:/\n4:memory:/process_api/abc\n0::/\n",
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": "9223372036854771712\n",
				"sys/fs/cgroup/memory/memory.limit_in_bytes":                 "9223372036854771712\n",
			},
			24 * gib, 24 * gib,
		},
		{
			"v1 limit",
			map[string]string{
				"proc/self/cgroup": "4:cpu,memory:/job\n",
				"sys/fs/cgroup/memory/job/memory.limit_in_bytes": "4294967296\n",
			},
			24 * gib, 4 * gib,
		},
		{
			"a limit above physical memory does not count",
			map[string]string{
				"proc/self/cgroup":             "0::/big\n",
				"sys/fs/cgroup/big/memory.max": "68719476736\n",
			},
			24 * gib, 24 * gib,
		},
		{
			"garbage is ignored",
			map[string]string{
				"proc/self/cgroup":           "nonsense\n0::/x\n",
				"sys/fs/cgroup/x/memory.max": "lots\n",
			},
			24 * gib, 24 * gib,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fstest.MapFS{}
			for name, data := range c.files {
				root[name] = &fstest.MapFile{Data: []byte(data)}
			}
			assert.Equal(t, c.want, memoryLimit(root, c.physical))
		})
	}
}

func TestOpen_DefaultSizesShowInStats(t *testing.T) {
	db, err := Open("", &Options{InMemory: true})
	if !assert.NoError(t, err) {
		return
	}
	defer db.Close()
	s := db.Stats()
	want := defaultCacheSize(processMemory())
	assert.Equal(t, want, db.Options().CacheSize)
	assert.Equal(t, want, s.Storage.BlockCacheCapacity)
	assert.Equal(t, memTableSize(want), s.Storage.MemTableSize)
	assert.Equal(t, db.Options().RowCacheSize, s.RowCache.Capacity)
}

func TestStats_WriteFiguresAfterAFlush(t *testing.T) {
	db, err := Open("", &Options{InMemory: true, NoSync: true})
	if !assert.NoError(t, err) {
		return
	}
	defer db.Close()
	before := db.Stats().Storage
	assert.Zero(t, before.FlushedBytes)
	for i := range 1000 {
		assert.NoError(t, db.Set([]byte{byte(i >> 8), byte(i), 'k'}, make([]byte, 100)))
	}
	assert.NoError(t, db.Flush())
	s := db.Stats().Storage
	assert.Greater(t, s.WALBytesWritten, uint64(100*1000), "the WAL took every value")
	assert.Positive(t, s.FlushedBytes)
	assert.GreaterOrEqual(t, s.WriteAmp, 1.0, "the WAL alone writes each byte once")
}

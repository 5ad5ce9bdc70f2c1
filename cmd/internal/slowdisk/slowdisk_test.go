package slowdisk

import (
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeFile makes a file called name on fs holding data.
func writeFile(t *testing.T, fs vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// counting returns fs slowed by latency, its waits counted instead of
// made.
func counting(fs vfs.FS, latency time.Duration) (*slowFS, *atomic.Int64) {
	var n atomic.Int64
	return &slowFS{FS: fs, latency: latency, block: func(d time.Duration) {
		if d == latency {
			n.Add(1)
		}
	}}, &n
}

func TestNew_NoLatencyIsTheSameFS(t *testing.T) {
	mem := vfs.NewMem()
	assert.Same(t, mem, New(mem, 0))
	assert.Same(t, mem, New(mem, -time.Millisecond))
	assert.Same(t, mem, vfs.Root(New(mem, time.Millisecond)), "vfs.Root unwraps it")
}

// TestOpen_TableReadTakesTheLatency: a ReadAt of a table blocks for the
// latency at least (no upper bound: a loaded machine may take longer),
// and reads the file's bytes.
func TestOpen_TableReadTakesTheLatency(t *testing.T) {
	const latency = 2 * time.Millisecond
	mem := vfs.NewMem()
	writeFile(t, mem, "000001.sst", []byte("table bytes"))
	f, err := New(mem, latency).Open("000001.sst", vfs.RandomReadsOption)
	require.NoError(t, err)
	defer f.Close()
	p := make([]byte, 5)
	start := time.Now()
	n, err := f.ReadAt(p, 6)
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.Equal(t, "bytes", string(p[:n]))
	assert.GreaterOrEqual(t, elapsed, latency)
}

// TestOpen_OnlyTablesAreSlowed: tables opened for reading, whichever way,
// wait on every ReadAt; every other file is the wrapped filesystem's own,
// unwrapped, and waits for nothing.
func TestOpen_OnlyTablesAreSlowed(t *testing.T) {
	mem := vfs.NewMem()
	plain, err := mem.Create("plain", vfs.WriteCategoryUnspecified)
	require.NoError(t, err)
	require.NoError(t, plain.Close())
	opens := map[string]func(fs vfs.FS, name string) (vfs.File, error){
		"Open":        func(fs vfs.FS, name string) (vfs.File, error) { return fs.Open(name) },
		"Open random": func(fs vfs.FS, name string) (vfs.File, error) { return fs.Open(name, vfs.RandomReadsOption) },
		"Open sequential": func(fs vfs.FS, name string) (vfs.File, error) {
			return fs.Open(name, vfs.SequentialReadsOption)
		},
		"OpenReadWrite": func(fs vfs.FS, name string) (vfs.File, error) {
			return fs.OpenReadWrite(name, vfs.WriteCategoryUnspecified)
		},
	}
	require.NoError(t, mem.MkdirAll("dir", 0o755))
	for _, tc := range []struct {
		name  string
		table bool
	}{
		{"000001.sst", true},
		{"dir/000002.sst", true},
		{"000003.log", false},
		{"MANIFEST-000001", false},
		{"OPTIONS-000004", false},
		{"000005.blob", false},
		{"sst", false},
	} {
		writeFile(t, mem, tc.name, []byte("0123456789"))
		for how, open := range opens {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				fs, waits := counting(mem, time.Millisecond)
				f, err := open(fs, tc.name)
				require.NoError(t, err)
				defer f.Close()
				p := make([]byte, 4)
				for range 3 {
					_, err := f.ReadAt(p, 2)
					require.NoError(t, err)
				}
				assert.Equal(t, "2345", string(p))
				if tc.table {
					assert.IsType(t, &slowFile{}, f)
					assert.Equal(t, int64(3), waits.Load(), "one wait per ReadAt")
				} else {
					assert.IsType(t, plainType(t, mem), f, "returned unwrapped")
					assert.Zero(t, waits.Load())
				}
			})
		}
	}
}

// plainType is a file of fs's own type.
func plainType(t *testing.T, fs vfs.FS) vfs.File {
	t.Helper()
	f, err := fs.Open("plain")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f
}

// TestSlowFile_KeepsTheFilesMethods: a slowed table on the operating
// system's filesystem still has its descriptor (Pebble's readahead
// fadvises through Fd) and its other methods.
func TestSlowFile_KeepsTheFilesMethods(t *testing.T) {
	name := filepath.Join(t.TempDir(), "000001.sst")
	writeFile(t, vfs.Default, name, []byte("0123456789"))
	f, err := New(vfs.Default, time.Microsecond).Open(name, vfs.SequentialReadsOption)
	require.NoError(t, err)
	defer f.Close()
	require.IsType(t, &slowFile{}, f)
	assert.NotEqual(t, vfs.InvalidFd, f.Fd())
	inner := f.(*slowFile).File
	assert.Equal(t, inner.Fd(), f.Fd())
	assert.Equal(t, inner.Prefetch(0, 10), f.Prefetch(0, 10))
	st, err := f.Stat()
	require.NoError(t, err)
	assert.Equal(t, int64(10), st.Size())
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(b))
}

// TestPebble_ReadsTablesThroughIt: a Get from a table, with the block
// cache cold, waits in the slow filesystem, so Pebble does read its
// tables through Open.
func TestPebble_ReadsTablesThroughIt(t *testing.T) {
	mem := vfs.NewMem()
	db, err := pebble.Open("db", &pebble.Options{FS: mem, Logger: quietLogger{}})
	require.NoError(t, err)
	require.NoError(t, db.Set([]byte("k"), []byte("v"), pebble.NoSync))
	require.NoError(t, db.Flush())
	require.NoError(t, db.Close())

	fs, waits := counting(mem, time.Millisecond)
	db, err = pebble.Open("db", &pebble.Options{FS: fs, Logger: quietLogger{}})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	before := waits.Load()
	v, closer, err := db.Get([]byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "v", string(v))
	require.NoError(t, closer.Close())
	assert.Greater(t, waits.Load(), before, "the Get read the table through the slow filesystem")
}

// quietLogger drops Pebble's routine lines and fails on a fatal one.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)              {}
func (quietLogger) Errorf(string, ...any)             {}
func (quietLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

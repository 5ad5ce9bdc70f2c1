package pebbledb

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/bindingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a store in a test directory, closed when the test ends.
func open(t *testing.T) *DB { t.Helper(); return bindingtest.OpenIn(t, Open, PropDir) }

// The suite, NoLostField among it: the striped lock makes an update
// atomic.
func TestDB_Suite(t *testing.T) {
	bindingtest.Run(t, bindingtest.Binding{
		Name:     Name,
		Open:     func(t *testing.T) ycsb.DB { return open(t) },
		NotFound: pebble.ErrNotFound,
		Atomic:   true,
	})
}

func TestDB_Read_MissingIsNotFound(t *testing.T) {
	_, err := open(t).Read(context.Background(), "usertable", "nobody", nil)
	assert.ErrorIs(t, err, pebble.ErrNotFound)
}

// An Insert or a Delete of a key waits for an update of it between its
// read and its write, and wins: the update does not write back what it
// read over it.
func TestDB_Update_HoldsTheKeysLock(t *testing.T) {
	const table = "usertable"
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, db *DB) error
		want  map[string][]byte // nil: the record is gone
	}{
		{"Insert", func(ctx context.Context, db *DB) error {
			return db.Insert(ctx, table, "k", map[string][]byte{"field0": []byte("other")})
		}, map[string][]byte{"field0": []byte("other")}},
		{"Delete", func(ctx context.Context, db *DB) error { return db.Delete(ctx, table, "k") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := open(t)
			require.NoError(t, db.Insert(ctx, table, "k", bindingtest.Record("k", 2)))
			done := make(chan struct{})
			var werr error
			db.beforeSet = func([]byte) {
				go func() { werr = tc.write(ctx, db); close(done) }()
				select {
				case <-done:
					t.Errorf("the %s ran inside the update", tc.name)
				case <-time.After(50 * time.Millisecond):
				}
			}
			require.NoError(t, db.Update(ctx, table, "k", map[string][]byte{"field1": []byte("mine")}))
			<-done
			require.NoError(t, werr)
			got, err := db.Read(ctx, table, "k", nil)
			if tc.want == nil {
				assert.ErrorIs(t, err, pebble.ErrNotFound)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// pebble.dir keeps the records across a Close; dropdata removes them.
func TestOpen_Dir(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	db, err := Open(properties.LoadMap(map[string]string{PropDir: dir}))
	require.NoError(t, err)
	require.NoError(t, db.Insert(ctx, "usertable", "k", bindingtest.Record("k", 1)))
	require.NoError(t, db.Close())
	require.DirExists(t, dir, "Close keeps a directory it was given")

	db, err = Open(properties.LoadMap(map[string]string{PropDir: dir}))
	require.NoError(t, err)
	got, err := db.Read(ctx, "usertable", "k", nil)
	assert.NoError(t, err)
	assert.Equal(t, bindingtest.Record("k", 1), got)
	require.NoError(t, db.Close())

	db, err = Open(properties.LoadMap(map[string]string{PropDir: dir, prop.DropData: "true"}))
	require.NoError(t, err)
	_, err = db.Read(ctx, "usertable", "k", nil)
	assert.ErrorIs(t, err, pebble.ErrNotFound)
	require.NoError(t, db.Close())
}

func TestOptions(t *testing.T) {
	opts, wo, err := Options(properties.NewProperties())
	require.NoError(t, err)
	assert.Equal(t, int64(8<<20), opts.CacheSize, "Pebble's default block cache, not enlarged")
	assert.Nil(t, opts.Cache, "pebble.Open makes the cache of CacheSize")
	def := pebble.DefaultOptions()
	assert.Equal(t, def.CacheSize, opts.CacheSize, "Pebble's defaults")
	assert.Equal(t, def.MemTableSize, opts.MemTableSize, "Pebble's defaults")
	assert.Equal(t, def.FormatMajorVersion, opts.FormatMajorVersion, "Pebble's defaults")
	assert.Same(t, pebble.NoSync, wo)

	_, wo, err = Options(properties.LoadMap(map[string]string{PropSync: "true"}))
	require.NoError(t, err)
	assert.Same(t, pebble.Sync, wo)
	_, _, err = Options(properties.LoadMap(map[string]string{PropSync: "often"}))
	assert.ErrorContains(t, err, PropSync)

	db := open(t)
	assert.False(t, db.Sync())
}

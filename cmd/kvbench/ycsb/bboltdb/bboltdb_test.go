package bboltdb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bbolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/bindingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a store in a test directory with props (name, value, …),
// closed when the test ends.
func open(t *testing.T, props ...string) *DB {
	t.Helper()
	return bindingtest.OpenIn(t, Open, PropDir, props...)
}

func TestDB_Suite(t *testing.T) {
	bindingtest.Run(t, bindingtest.Binding{
		Name:     Name,
		Open:     func(t *testing.T) ycsb.DB { return open(t) },
		NotFound: ErrNotFound,
		Atomic:   true,
	})
}

// fsync is off by default, at commits and as the file grows, and back to
// bbolt's default with bbolt.no_sync=false; the file is bolt.db in
// bbolt.dir.
func TestOpen_NoSync(t *testing.T) {
	db := open(t)
	assert.True(t, db.Bolt().NoSync)
	assert.True(t, db.Bolt().NoGrowSync)
	assert.Equal(t, filepath.Join(db.Dir(), FileName), db.Bolt().Path())

	db = open(t, PropNoSync, "false")
	assert.False(t, db.Bolt().NoSync)
	assert.False(t, db.Bolt().NoGrowSync)

	_, err := Open(properties.LoadMap(map[string]string{PropDir: t.TempDir(), PropNoSync: "often"}))
	assert.ErrorContains(t, err, PropNoSync)
}

func TestOptions(t *testing.T) {
	opts, err := Options(properties.NewProperties())
	require.NoError(t, err)
	def := *bbolt.DefaultOptions
	assert.True(t, opts.NoSync)
	assert.True(t, opts.NoGrowSync)
	assert.Equal(t, def.FreelistType, opts.FreelistType, "bbolt's defaults")
	assert.Equal(t, def.Timeout, opts.Timeout, "bbolt's defaults")
	assert.False(t, bbolt.DefaultOptions.NoGrowSync, "bbolt's defaults are left as they are")
}

// A missing record, in a table that has records or in one that has none
// (no bucket), is ErrNotFound to a read and to an update.
func TestDB_Read_NotFound(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	const table = "usertable"
	_, err := db.Read(ctx, table, "k", nil)
	assert.ErrorIs(t, err, ErrNotFound, "no bucket")
	require.NoError(t, db.Insert(ctx, table, "k", bindingtest.Record("k", 2)))
	_, err = db.Read(ctx, table, "j", nil)
	assert.ErrorIs(t, err, ErrNotFound, "no record")
	err = db.Update(ctx, "other", "k", map[string][]byte{"field0": []byte("x")})
	assert.ErrorIs(t, err, ErrNotFound, "no bucket")
	require.NoError(t, db.Delete(ctx, "other", "k"), "deleting from a table without a bucket is not an error")
}

package badger4db

import (
	"context"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/bindingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a store in a test directory, closed when the test ends.
func open(t *testing.T) *DB { t.Helper(); return bindingtest.OpenIn(t, Open, PropDir) }

func TestDB_Suite(t *testing.T) {
	bindingtest.Run(t, bindingtest.Binding{
		Name:     Name,
		Open:     func(t *testing.T) ycsb.DB { return open(t) },
		NotFound: badger.ErrKeyNotFound,
		Atomic:   true,
	})
}

// A write between an update's read and its write makes the update run
// again, on the record as that write left it, and counts a retry; a
// conflict at every attempt ends after 10.
func TestDB_Update_RetriesAConflict(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	const table = "usertable"
	require.NoError(t, db.Insert(ctx, table, "k", bindingtest.Record("k", 2)))
	db.beforeSet = func(attempt int, _ []byte) {
		if attempt == 1 {
			require.NoError(t, db.Insert(ctx, table, "k", map[string][]byte{"field0": []byte("other")}))
		}
	}
	require.NoError(t, db.Update(ctx, table, "k", map[string][]byte{"field1": []byte("mine")}))
	assert.Equal(t, int64(1), db.TxnRetries())
	got, err := db.Read(ctx, table, "k", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"field0": []byte("other"), "field1": []byte("mine")}, got)

	db.beforeSet = func(int, []byte) { require.NoError(t, db.Insert(ctx, table, "k", bindingtest.Record("k", 1))) }
	err = db.Update(ctx, table, "k", map[string][]byte{"field1": []byte("lost")})
	require.ErrorIs(t, err, badger.ErrConflict)
	assert.Equal(t, int64(1+9), db.TxnRetries())
}

func TestOptions(t *testing.T) {
	opts, err := Options(properties.NewProperties(), "/d")
	require.NoError(t, err)
	def := badger.DefaultOptions("/d")
	assert.False(t, opts.SyncWrites)
	assert.Equal(t, def.MemTableSize, opts.MemTableSize, "badger's defaults")
	assert.Equal(t, def.ValueThreshold, opts.ValueThreshold, "badger's defaults")
	assert.Equal(t, def.BlockCacheSize, opts.BlockCacheSize, "badger's defaults")

	opts, err = Options(properties.LoadMap(map[string]string{PropSyncWrites: "true"}), "/d")
	require.NoError(t, err)
	assert.True(t, opts.SyncWrites)
	_, err = Options(properties.LoadMap(map[string]string{PropSyncWrites: "often"}), "/d")
	assert.ErrorContains(t, err, PropSyncWrites)
}

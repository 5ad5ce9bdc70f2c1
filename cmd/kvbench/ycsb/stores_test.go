package main

import (
	"bytes"
	"io"
	"reflect"
	"testing"
	"unsafe"

	"github.com/dgraph-io/badger"
	badger4 "github.com/dgraph-io/badger/v4"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/badger4db"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/bboltdb"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/coopkvdb"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/pebbledb"
)

// openTest opens store name as the runner does, in a test directory.
func openTest(t *testing.T, name string) ycsb.DB {
	t.Helper()
	if raceEnabled && name == "bolt" {
		t.Skip("bolt v1.3.1 fails checkptr (see race_test.go)")
	}
	cfg := &config{records: 10, operations: 10, threads: 1, fieldCount: 1, fieldLen: 1}
	dir := t.TempDir()
	p, err := phaseProps(cfg, "a", false, storeProps(knownStores[name], dir, nil), dir+"/m.json")
	require.NoError(t, err)
	db, err := openStore(knownStores[name], p)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// field reads the unexported field name of the struct *v points to.
func field(t *testing.T, v any, name string) reflect.Value {
	t.Helper()
	f := reflect.ValueOf(v).Elem().FieldByName(name)
	require.True(t, f.IsValid(), "%T has a field %s", v, name)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// No store fsyncs its writes.
func TestStores_NoSync(t *testing.T) {
	t.Run("bolt", func(t *testing.T) {
		bdb, err := boltHandle(openTest(t, "bolt"))
		require.NoError(t, err)
		assert.True(t, bdb.NoSync)
		assert.True(t, bdb.NoGrowSync)
	})
	t.Run("bbolt", func(t *testing.T) {
		bdb := openTest(t, "bbolt").(*bboltdb.DB).Bolt()
		assert.True(t, bdb.NoSync)
		assert.True(t, bdb.NoGrowSync)
	})
	t.Run("pebble", func(t *testing.T) {
		assert.False(t, openTest(t, "pebble").(*pebbledb.DB).Sync())
	})
	t.Run("badger", func(t *testing.T) {
		bdb := field(t, openTest(t, "badger"), "db").Interface().(*badger.DB)
		opt := field(t, bdb, "opt").Interface().(badger.Options)
		assert.False(t, opt.SyncWrites)
	})
	t.Run("badger-v4", func(t *testing.T) {
		opts := openTest(t, "badger-v4").(*badger4db.DB).Badger().Opts()
		assert.False(t, opts.SyncWrites)
		assert.Equal(t, badger4.DefaultOptions("").MemTableSize, opts.MemTableSize, "badger's defaults")
	})
	for _, name := range []string{"coopkv-mlfq", "coopkv-fifo", "coopkv-direct"} {
		t.Run(name, func(t *testing.T) {
			db := openTest(t, name).(*coopkvdb.DB)
			opts := db.KV().Options()
			assert.True(t, opts.NoSync)
			assert.Equal(t, name, "coopkv-"+string(opts.Scheduler))
			assert.True(t, db.Txn(), "updates in kv.Update")
		})
	}
}

func TestBoltHandle_RefusesOtherBindings(t *testing.T) {
	_, err := boltHandle(openTest(t, "coopkv-mlfq"))
	assert.ErrorContains(t, err, "has no field db")
}

func TestStoreProps_ExtraWins(t *testing.T) {
	m := storeProps(knownStores["coopkv-mlfq"], "/d", []string{"coopkv.rowcache = -1", "coopkv.scheduler=fifo"})
	assert.Equal(t, map[string]string{
		"coopkv.dir":       "/d/coopkv",
		"coopkv.scheduler": "fifo",
		"coopkv.nosync":    "true",
		"coopkv.txn":       "true",
		"coopkv.nowarm":    "false",
		"coopkv.rowcache":  "-1",
	}, m)
}

// coopkv, badger v4, bbolt and Pebble round-trip a record through go-ycsb's interface,
// and store it as the same bytes: one codec, so the comparison is of the
// engines.
func TestStores_RoundTripOneCodec(t *testing.T) {
	ctx := t.Context()
	values := map[string][]byte{"field0": []byte("zero"), "field1": []byte("one"), "field2": []byte("two")}
	stored := map[string][]byte{}
	for _, name := range []string{"coopkv-mlfq", "badger-v4", "bbolt", "pebble"} {
		t.Run(name, func(t *testing.T) {
			db := openTest(t, name)
			require.NoError(t, db.Insert(ctx, "usertable", "user1", values))
			require.NoError(t, db.Update(ctx, "usertable", "user1", map[string][]byte{"field1": []byte("uno")}))
			got, err := db.Read(ctx, "usertable", "user1", nil)
			require.NoError(t, err)
			assert.Equal(t, map[string][]byte{"field0": []byte("zero"), "field1": []byte("uno"), "field2": []byte("two")}, got)
			rows, err := db.Scan(ctx, "usertable", "user0", 10, []string{"field2"})
			require.NoError(t, err)
			assert.Equal(t, []map[string][]byte{{"field2": []byte("two")}}, rows)

			k := []byte("usertable:user1")
			switch db := db.(type) {
			case *coopkvdb.DB:
				stored[name], err = db.KV().Get(ctx, k)
			case *bboltdb.DB:
				err = db.Bolt().View(func(tx *bbolt.Tx) error {
					stored[name] = bytes.Clone(tx.Bucket([]byte("usertable")).Get(k))
					return nil
				})
			case *pebbledb.DB:
				var v []byte
				var closer io.Closer
				if v, closer, err = db.Pebble().Get(k); err == nil {
					stored[name] = bytes.Clone(v)
					err = closer.Close()
				}
			case *badger4db.DB:
				err = db.Badger().View(func(txn *badger4.Txn) error {
					item, err := txn.Get(k)
					if err == nil {
						stored[name], err = item.ValueCopy(nil)
					}
					return err
				})
			}
			require.NoError(t, err)
		})
	}
	require.Len(t, stored, 4)
	for _, name := range []string{"badger-v4", "bbolt", "pebble"} {
		assert.Equal(t, stored["coopkv-mlfq"], stored[name], "%s holds the same record bytes as coopkv", name)
	}
}

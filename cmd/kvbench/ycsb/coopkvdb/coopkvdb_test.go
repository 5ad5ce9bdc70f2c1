package coopkvdb

import (
	"context"
	"testing"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/bindingtest"
	"github.com/coopkv/coopkv/kv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a store in a test directory with the scheduler given and
// props (name, value, …), closed when the test ends.
func open(t *testing.T, scheduler string, props ...string) *DB {
	t.Helper()
	return bindingtest.OpenIn(t, Open, PropDir, append([]string{PropScheduler, scheduler}, props...)...)
}

// The binding passes the suite on every scheduler, its updates as
// transactions (coopkv.txn, the default) and as a Get and then a Set.
func TestDB_Suite(t *testing.T) {
	for _, tc := range []struct{ scheduler, txn string }{
		{"mlfq", "true"}, {"fifo", "true"}, {"direct", "true"}, {"mlfq", "false"}, {"direct", "false"},
	} {
		t.Run(tc.scheduler+"/txn="+tc.txn, func(t *testing.T) {
			bindingtest.Run(t, bindingtest.Binding{
				Name:     Name,
				Open:     func(t *testing.T) ycsb.DB { return open(t, tc.scheduler, PropTxn, tc.txn) },
				NotFound: kv.ErrNotFound,
				Atomic:   tc.txn == "true",
			})
		})
	}
}

func TestDB_Batch(t *testing.T) {
	for _, txn := range []string{"true", "false"} {
		t.Run("txn="+txn, func(t *testing.T) { testBatch(t, open(t, "mlfq", PropTxn, txn)) })
	}
}

func testBatch(t *testing.T, db *DB) {
	ctx := context.Background()
	const table = "usertable"
	keys := []string{"a", "b", "c"}
	recs := []map[string][]byte{bindingtest.Record("a", 3), bindingtest.Record("b", 3), bindingtest.Record("c", 3)}
	require.NoError(t, db.BatchInsert(ctx, table, keys, recs))

	got, err := db.BatchRead(ctx, table, keys, []string{"field0"})
	require.NoError(t, err)
	assert.Equal(t, []map[string][]byte{
		{"field0": []byte("a/field0")}, {"field0": []byte("b/field0")}, {"field0": []byte("c/field0")},
	}, got)

	require.NoError(t, db.BatchUpdate(ctx, table, []string{"a", "c"}, []map[string][]byte{
		{"field1": []byte("A1")}, {"field2": []byte("C2")},
	}))
	a, err := db.Read(ctx, table, "a", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"field0": []byte("a/field0"), "field1": []byte("A1"), "field2": []byte("a/field2")}, a)
	err = db.BatchUpdate(ctx, table, []string{"a", "missing"}, []map[string][]byte{{"field1": []byte("x")}, {"field1": []byte("y")}})
	require.ErrorIs(t, err, kv.ErrNotFound)
	a, err = db.Read(ctx, table, "a", []string{"field1"})
	require.NoError(t, err)
	assert.Equal(t, []byte("A1"), a["field1"], "a failed batch update writes nothing")

	require.NoError(t, db.BatchDelete(ctx, table, []string{"a", "b"}))
	_, err = db.BatchRead(ctx, table, keys, nil)
	require.ErrorIs(t, err, kv.ErrNotFound)
	rows, err := db.Scan(ctx, table, "", 10, nil)
	require.NoError(t, err)
	c := bindingtest.Record("c", 3)
	c["field2"] = []byte("C2")
	assert.Equal(t, []map[string][]byte{c}, rows)

	require.Error(t, db.BatchInsert(ctx, table, keys, recs[:1]), "keys and values must pair up")
	require.NoError(t, db.BatchUpdate(ctx, table, nil, nil), "an empty batch does nothing")
}

func TestParseSettings_ReportsEveryProblem(t *testing.T) {
	p := properties.LoadMap(map[string]string{
		PropScheduler: "lottery",
		PropRowCache:  "lots",
		PropWorkers:   "4.5",
		PropNoSync:    "maybe",
		PropTxn:       "sometimes",
		PropNoWarm:    "perhaps",
	})
	_, err := ParseSettings(p)
	require.Error(t, err)
	for _, name := range []string{PropScheduler, PropRowCache, PropWorkers, PropNoSync, PropTxn, PropNoWarm} {
		assert.ErrorContains(t, err, name)
	}
}

func TestParseSettings_Values(t *testing.T) {
	set, err := ParseSettings(properties.LoadMap(map[string]string{
		PropDir:        "/somewhere",
		PropScheduler:  "direct",
		PropRowCache:   "-1",
		PropBlockCache: "1048576",
		PropWorkers:    "3",
		PropTxn:        "false",
		PropNoWarm:     "true",
	}))
	require.NoError(t, err)
	assert.Equal(t, Settings{
		Dir: "/somewhere",
		KV: &kv.Options{
			Scheduler:    kv.SchedulerDirect,
			RowCacheSize: -1,
			CacheSize:    1 << 20,
			Workers:      3,
			NoSync:       true, // the default: no store in the comparison fsyncs
			NoWarm:       true,
		},
		Txn: false,
	}, set)

	set, err = ParseSettings(properties.LoadMap(map[string]string{PropNoSync: "false"}))
	require.NoError(t, err)
	assert.False(t, set.KV.NoSync)
	assert.Equal(t, kv.SchedulerMLFQ, set.KV.Scheduler)
	assert.True(t, set.Txn, "updates are transactions by default")
	assert.False(t, set.KV.NoWarm, "the caches warm themselves by default")
}

// A write between an update's read and its write makes the update run
// again, on the record as that write left it, and counts a retry.
func TestDB_UpdateTxn_RetriesAConflict(t *testing.T) {
	ctx := context.Background()
	db := open(t, "mlfq")
	const table = "usertable"
	require.NoError(t, db.Insert(ctx, table, "k", bindingtest.Record("k", 2)))
	db.beforeSet = func(attempt int, k []byte) {
		if attempt == 1 { // a plain write of the key, between the Txn's Get and its Set
			require.NoError(t, db.set(k, map[string][]byte{"field0": []byte("other")}))
		}
	}
	require.NoError(t, db.Update(ctx, table, "k", map[string][]byte{"field1": []byte("mine")}))
	assert.Equal(t, int64(1), db.TxnRetries())
	got, err := db.Read(ctx, table, "k", nil)
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"field0": []byte("other"), "field1": []byte("mine")}, got,
		"the second attempt reads the other write's record")

	// A conflict at every attempt: kv.Update gives up after 10.
	db.beforeSet = func(_ int, k []byte) { require.NoError(t, db.set(k, bindingtest.Record("k", 1))) }
	err = db.Update(ctx, table, "k", map[string][]byte{"field1": []byte("lost")})
	require.ErrorIs(t, err, kv.ErrConflict)
	assert.ErrorContains(t, err, "coopkvdb: update usertable:k: ")
	assert.Equal(t, int64(1+9), db.TxnRetries())
}

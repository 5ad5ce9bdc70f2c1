package coopkvdb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/kv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a store in a test directory with the scheduler given and
// props (name, value, …), closed when the test ends.
func open(t *testing.T, scheduler string, props ...string) *DB {
	t.Helper()
	m := map[string]string{
		PropDir:       filepath.Join(t.TempDir(), "store"),
		PropScheduler: scheduler,
	}
	for i := 0; i+1 < len(props); i += 2 {
		m[props[i]] = props[i+1]
	}
	p := properties.LoadMap(m)
	db, err := Open(p)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// rec is a record of n fields whose values name the key and field.
func rec(key string, n int) map[string][]byte {
	m := make(map[string][]byte, n)
	for i := range n {
		f := fmt.Sprintf("field%d", i)
		m[f] = []byte(key + "/" + f)
	}
	return m
}

func TestDB_RoundTrip(t *testing.T) {
	for _, tc := range []struct{ scheduler, txn string }{
		{"mlfq", "true"}, {"fifo", "true"}, {"direct", "true"}, {"mlfq", "false"}, {"direct", "false"},
	} {
		t.Run(tc.scheduler+"/txn="+tc.txn, func(t *testing.T) {
			ctx := context.Background()
			db := open(t, tc.scheduler, PropTxn, tc.txn)
			const table = "usertable"
			keys := []string{"user1", "user2", "user3", "user4", "user5"}
			for _, k := range keys {
				require.NoError(t, db.Insert(ctx, table, k, rec(k, 10)))
			}
			// A record of another table, just past usertable's keys: no
			// scan of usertable may reach it.
			require.NoError(t, db.Insert(ctx, "usertablf", "user0", rec("other", 1)))

			// Read: every field, then a subset.
			got, err := db.Read(ctx, table, "user3", nil)
			require.NoError(t, err)
			assert.Equal(t, rec("user3", 10), got)
			got, err = db.Read(ctx, table, "user3", []string{"field2", "field7", "nosuchfield"})
			require.NoError(t, err)
			assert.Equal(t, map[string][]byte{"field2": []byte("user3/field2"), "field7": []byte("user3/field7")}, got)

			// Update merges: the fields given change, the others stay.
			require.NoError(t, db.Update(ctx, table, "user3", map[string][]byte{
				"field2":  []byte("new2"),
				"field10": []byte("added"),
			}))
			want := rec("user3", 10)
			want["field2"] = []byte("new2")
			want["field10"] = []byte("added")
			got, err = db.Read(ctx, table, "user3", nil)
			require.NoError(t, err)
			assert.Equal(t, want, got)

			// Update of a missing record fails as a Read does.
			err = db.Update(ctx, table, "nobody", map[string][]byte{"field0": []byte("x")})
			require.ErrorIs(t, err, kv.ErrNotFound)

			// Scan: from a start key, at most count records, key order,
			// the fields asked for.
			rows, err := db.Scan(ctx, table, "user2", 2, []string{"field1"})
			require.NoError(t, err)
			assert.Equal(t, []map[string][]byte{
				{"field1": []byte("user2/field1")},
				{"field1": []byte("user3/field1")},
			}, rows)
			rows, err = db.Scan(ctx, table, "user4", 100, nil)
			require.NoError(t, err)
			assert.Equal(t, []map[string][]byte{rec("user4", 10), rec("user5", 10)}, rows, "a scan stops at the table's end")
			rows, err = db.Scan(ctx, table, "user0", 0, nil)
			require.NoError(t, err)
			assert.Empty(t, rows)

			// Delete: the record is gone, the others are not.
			require.NoError(t, db.Delete(ctx, table, "user3"))
			_, err = db.Read(ctx, table, "user3", nil)
			require.ErrorIs(t, err, kv.ErrNotFound)
			require.NoError(t, db.Delete(ctx, table, "user3"), "deleting a missing record is not an error")
			rows, err = db.Scan(ctx, table, "user1", 10, []string{"field0"})
			require.NoError(t, err)
			assert.Len(t, rows, 4)
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
	recs := []map[string][]byte{rec("a", 3), rec("b", 3), rec("c", 3)}
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
	c := rec("c", 3)
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
	})
	_, err := ParseSettings(p)
	require.Error(t, err)
	for _, name := range []string{PropScheduler, PropRowCache, PropWorkers, PropNoSync, PropTxn} {
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
		},
		Txn: false,
	}, set)

	set, err = ParseSettings(properties.LoadMap(map[string]string{PropNoSync: "false"}))
	require.NoError(t, err)
	assert.False(t, set.KV.NoSync)
	assert.Equal(t, kv.SchedulerMLFQ, set.KV.Scheduler)
	assert.True(t, set.Txn, "updates are transactions by default")
}

// The binding is in go-ycsb's registry, and a store without coopkv.dir
// lives in a temporary directory that Close removes.
func TestRegistered_TempDir(t *testing.T) {
	c := ycsb.GetDBCreator(Name)
	require.NotNil(t, c)
	ydb, err := c.Create(properties.NewProperties())
	require.NoError(t, err)
	db := ydb.(*DB)
	assert.True(t, db.KV().Options().NoSync)
	require.NoError(t, db.Insert(context.Background(), "t", "k", rec("k", 1)))
	dir := db.dir
	require.DirExists(t, dir)
	require.NoError(t, db.Close())
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// Threads insert, read, update and scan at once, as go-ycsb's client
// does: under -race this checks the binding's pooled codecs.
func TestDB_Concurrent(t *testing.T) {
	ctx := context.Background()
	db := open(t, "mlfq")
	const table, threads, keys = "usertable", 4, 50
	var wg sync.WaitGroup
	for th := range threads {
		wg.Go(func() {
			for i := range keys {
				k := fmt.Sprintf("user%d-%03d", th, i)
				assert.NoError(t, db.Insert(ctx, table, k, rec(k, 10)))
				got, err := db.Read(ctx, table, k, []string{"field3"})
				if assert.NoError(t, err) {
					assert.Equal(t, map[string][]byte{"field3": []byte(k + "/field3")}, got)
				}
				assert.NoError(t, db.Update(ctx, table, k, map[string][]byte{"field0": []byte("u")}))
				rows, err := db.Scan(ctx, table, fmt.Sprintf("user%d-", th), 10, nil)
				// The thread's own records come first; other threads'
				// may follow them.
				if assert.NoError(t, err) && assert.GreaterOrEqual(t, len(rows), min(i+1, 10)) {
					for j := range min(i+1, 10) {
						assert.Equal(t, fmt.Sprintf("user%d-%03d/field1", th, j), string(rows[j]["field1"]))
					}
				}
			}
		})
	}
	wg.Wait()
	rows, err := db.Scan(ctx, table, "", threads*keys+1, []string{"field0", "field9"})
	require.NoError(t, err)
	require.Len(t, rows, threads*keys)
	for _, r := range rows {
		assert.Equal(t, []byte("u"), r["field0"])
		assert.Len(t, r, 2)
	}
}

// Threads update one record at once, each its own field: in transactions
// no thread's field is lost, as a Get then a Set (coopkv.txn=false) loses
// them when two updates interleave.
func TestDB_UpdateTxn_NoLostField(t *testing.T) {
	ctx := context.Background()
	db := open(t, "mlfq")
	const table, key, threads, rounds = "usertable", "hot", 8, 40
	require.NoError(t, db.Insert(ctx, table, key, rec(key, 1)))
	var wg sync.WaitGroup
	for th := range threads {
		wg.Go(func() {
			f := fmt.Sprintf("thread%d", th)
			for i := range rounds {
				assert.NoError(t, db.Update(ctx, table, key, map[string][]byte{f: fmt.Appendf(nil, "%d", i)}))
			}
		})
	}
	wg.Wait()
	got, err := db.Read(ctx, table, key, nil)
	require.NoError(t, err)
	want := rec(key, 1)
	for th := range threads {
		want[fmt.Sprintf("thread%d", th)] = fmt.Appendf(nil, "%d", rounds-1)
	}
	assert.Equal(t, want, got)
	t.Logf("%d retries", db.TxnRetries())
}

// A write between an update's read and its write makes the update run
// again, on the record as that write left it, and counts a retry.
func TestDB_UpdateTxn_RetriesAConflict(t *testing.T) {
	ctx := context.Background()
	db := open(t, "mlfq")
	const table = "usertable"
	require.NoError(t, db.Insert(ctx, table, "k", rec("k", 2)))
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
	db.beforeSet = func(_ int, k []byte) { require.NoError(t, db.set(k, rec("k", 1))) }
	err = db.Update(ctx, table, "k", map[string][]byte{"field1": []byte("lost")})
	require.ErrorIs(t, err, kv.ErrConflict)
	assert.ErrorContains(t, err, "coopkvdb: update usertable:k: ")
	assert.Equal(t, int64(1+9), db.TxnRetries())
}

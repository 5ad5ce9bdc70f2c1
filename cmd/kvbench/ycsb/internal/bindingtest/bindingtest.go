// Package bindingtest is the suite that the runner's own go-ycsb bindings
// (coopkvdb, badger4db, bboltdb, pebbledb) pass, in the spirit of
// kv/kvtest: a binding's tests call Run with a function that opens a
// fresh, empty store, and what go-ycsb's core workloads rely on is checked
// against it — reads of all or some fields, updates that merge, scans that
// stay within their table, deletes, threads at once, and, for a binding
// whose updates are transactions, no update lost to another.
package bindingtest

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
)

// Binding is what Run needs to know of a binding.
type Binding struct {
	// Name is the binding's name in go-ycsb's registry.
	Name string
	// Open opens a fresh, empty store, closed when the test ends.
	Open func(t *testing.T) ycsb.DB
	// NotFound is the error that a read or an update of a missing record
	// wraps.
	NotFound error
	// Atomic says an update is one transaction: updaters of one record at
	// once lose none of each other's fields.
	Atomic bool
}

// OpenIn opens a store with open in a new test directory, named by the
// property dirProp, with props (name, value, …) besides; it is closed when
// the test ends. Each binding's tests open their stores through it.
func OpenIn[DB ycsb.DB](t *testing.T, open func(*properties.Properties) (DB, error), dirProp string, props ...string) DB {
	t.Helper()
	m := map[string]string{dirProp: filepath.Join(t.TempDir(), "store")}
	for i := 0; i+1 < len(props); i += 2 {
		m[props[i]] = props[i+1]
	}
	db, err := open(properties.LoadMap(m))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

// Run runs the suite, one store per subtest.
func Run(t *testing.T, b Binding) {
	t.Run("Registered", func(t *testing.T) { testRegistered(t, b.Name) })
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, b) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, b.Open(t)) })
	if b.Atomic {
		t.Run("NoLostField", func(t *testing.T) { NoLostField(t, b.Open(t)) })
	}
}

// Record is a record of n fields, field0 … field<n-1>, whose values name
// the key and the field.
func Record(key string, n int) map[string][]byte {
	m := make(map[string][]byte, n)
	for i := range n {
		f := fmt.Sprintf("field%d", i)
		m[f] = []byte(key + "/" + f)
	}
	return m
}

// testRegistered checks that the binding is in go-ycsb's registry, and
// that a store opened without a directory lives in a temporary one that
// Close removes.
func testRegistered(t *testing.T, name string) {
	c := ycsb.GetDBCreator(name)
	require.NotNil(t, c, "go-ycsb has no binding %q", name)
	db, err := c.Create(properties.NewProperties())
	require.NoError(t, err)
	require.NoError(t, db.Insert(context.Background(), "t", "k", Record("k", 1)))
	d, ok := db.(interface{ Dir() string })
	require.True(t, ok, "%T has no Dir", db)
	dir := d.Dir()
	require.DirExists(t, dir)
	require.NoError(t, db.Close())
	_, err = os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func testRoundTrip(t *testing.T, b Binding) {
	ctx := context.Background()
	db := b.Open(t)
	const table = "usertable"
	for _, k := range []string{"user1", "user2", "user3", "user4", "user5"} {
		require.NoError(t, db.Insert(ctx, table, k, Record(k, 10)))
	}
	// A record of another table, just past usertable's keys: no scan of
	// usertable may reach it.
	require.NoError(t, db.Insert(ctx, "usertablf", "user0", Record("other", 1)))

	// Read: every field, then a subset.
	got, err := db.Read(ctx, table, "user3", nil)
	require.NoError(t, err)
	assert.Equal(t, Record("user3", 10), got)
	got, err = db.Read(ctx, table, "user3", []string{"field2", "field7", "nosuchfield"})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"field2": []byte("user3/field2"), "field7": []byte("user3/field7")}, got)

	// Update merges: the fields given change, the others stay.
	require.NoError(t, db.Update(ctx, table, "user3", map[string][]byte{
		"field2":  []byte("new2"),
		"field10": []byte("added"),
	}))
	want := Record("user3", 10)
	want["field2"] = []byte("new2")
	want["field10"] = []byte("added")
	got, err = db.Read(ctx, table, "user3", nil)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Update of a missing record fails as a Read does.
	err = db.Update(ctx, table, "nobody", map[string][]byte{"field0": []byte("x")})
	require.ErrorIs(t, err, b.NotFound)

	// Scan: from a start key, at most count records, key order, the
	// fields asked for.
	rows, err := db.Scan(ctx, table, "user2", 2, []string{"field1"})
	require.NoError(t, err)
	assert.Equal(t, []map[string][]byte{
		{"field1": []byte("user2/field1")},
		{"field1": []byte("user3/field1")},
	}, rows)
	rows, err = db.Scan(ctx, table, "user4", 100, nil)
	require.NoError(t, err)
	assert.Equal(t, []map[string][]byte{Record("user4", 10), Record("user5", 10)}, rows, "a scan stops at the table's end")
	rows, err = db.Scan(ctx, table, "user0", 0, nil)
	require.NoError(t, err)
	assert.Empty(t, rows)

	// Delete: the record is gone, the others are not.
	require.NoError(t, db.Delete(ctx, table, "user3"))
	_, err = db.Read(ctx, table, "user3", nil)
	require.ErrorIs(t, err, b.NotFound)
	require.NoError(t, db.Delete(ctx, table, "user3"), "deleting a missing record is not an error")
	rows, err = db.Scan(ctx, table, "user1", 10, []string{"field0"})
	require.NoError(t, err)
	assert.Len(t, rows, 4)
}

// testConcurrent has threads insert, read, update and scan at once, as
// go-ycsb's client does: under -race this checks the binding's pooled
// codecs.
func testConcurrent(t *testing.T, db ycsb.DB) {
	ctx := context.Background()
	const table, threads, keys = "usertable", 4, 50
	var wg sync.WaitGroup
	for th := range threads {
		wg.Go(func() {
			for i := range keys {
				k := fmt.Sprintf("user%d-%03d", th, i)
				assert.NoError(t, db.Insert(ctx, table, k, Record(k, 10)))
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

// NoLostField has 8 threads update one record at once, 40 times each, each
// its own field, and checks that every thread's last value is there: it
// holds when an update is one transaction, and fails, more often than
// not, when it is a read and then a write that may interleave with
// another's.
func NoLostField(t *testing.T, db ycsb.DB) {
	ctx := context.Background()
	const table, key, threads, rounds = "usertable", "hot", 8, 40
	require.NoError(t, db.Insert(ctx, table, key, Record(key, 1)))
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
	want := Record(key, 1)
	for th := range threads {
		want[fmt.Sprintf("thread%d", th)] = fmt.Appendf(nil, "%d", rounds-1)
	}
	assert.Equal(t, want, got)
}

// Package pebbledb is a go-ycsb binding for raw Pebble
// (github.com/cockroachdb/pebble/v2), the engine under coopkv: what a Go
// team gets by using Pebble directly, at its defaults, to compare coopkv
// with.
//
// Importing the package registers the binding with go-ycsb under the name
// "pebble".
//
// # Records
//
// As in packages coopkvdb and badger4db: a record is one msgpack map of
// field name to value under the key table + ":" + key, encoded by package
// internal/record, so Pebble, badger and coopkv store the same bytes.
//
// # Settings
//
// Pebble's defaults ([pebble.DefaultOptions], what [pebble.Open] makes of
// an empty Options): among them an 8 MiB block cache, memtables included,
// which the binding leaves as it is — that is what raw Pebble gives, while
// coopkv's kv.Open sizes its own (a quarter of the process's memory,
// within 64 MiB and 8 GiB). Writes go with [pebble.NoSync] unless the
// property says otherwise: no store in the comparison fsyncs a write.
//
// Pebble has no transactions, so an update — read the record, merge the
// values in, write it — would lose a write made between its read and its
// write. The binding does what a team using raw Pebble must add itself: a
// striped lock (256 mutexes, one chosen by a hash of the key) held across
// an update's Get and Set, and across every Insert and Delete, so that
// writes of one key run one at a time while reads take no lock. It costs
// a lock per write, contended only by writes of keys on the same stripe;
// no update is ever run again. go-ycsb v1.0.3 has no read-modify-write
// call (workload F's is a Read, then an Update), so the locked section is
// the Update.
//
// # Properties
//
//	pebble.dir   the store's directory; "" (default) = a new temporary
//	             directory, removed by Close
//	pebble.sync  fsync each write ([pebble.Sync]); false (default) =
//	             [pebble.NoSync]
//	dropdata     go-ycsb's: remove pebble.dir before opening
package pebbledb

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/binding"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/record"
)

// Name is the binding's name in go-ycsb's registry.
const Name = "pebble"

// The binding's properties; see the package documentation.
const (
	PropDir  = "pebble.dir"
	PropSync = "pebble.sync"
)

// stripes is the number of write locks; a power of two, so the modulo is
// a mask.
const stripes = 256

func init() { ycsb.RegisterDBCreator(Name, binding.Creator[*DB](Open)) }

// DB is a Pebble store seen as a go-ycsb database; its methods are safe
// for concurrent use.
type DB struct {
	binding.Base
	db *pebble.DB
	wo *pebble.WriteOptions
	// seed and locks make the striped lock that serializes the writes of
	// a key (see the package documentation).
	seed  maphash.Seed
	locks [stripes]sync.Mutex
	// beforeSet, when set (tests only), runs in an update between its read
	// and its write, with the stripe's lock held.
	beforeSet func(key []byte)
}

var _ ycsb.DB = (*DB)(nil)

// Options returns the Pebble options and the write options that p asks
// for: Pebble's defaults, as pebble.Open completes them, and NoSync unless
// pebble.sync is true.
func Options(p *properties.Properties) (*pebble.Options, *pebble.WriteOptions, error) {
	wo := pebble.NoSync
	if s, ok := p.Get(PropSync); ok && s != "" {
		sync, err := strconv.ParseBool(s)
		if err != nil {
			return nil, nil, fmt.Errorf("pebbledb: %s=%q is not a boolean", PropSync, s)
		}
		if sync {
			wo = pebble.Sync
		}
	}
	return pebble.DefaultOptions(), wo, nil
}

// Open opens the store that p describes (see the package documentation).
func Open(p *properties.Properties) (*DB, error) {
	opts, wo, err := Options(p)
	if err != nil {
		return nil, err
	}
	db := &DB{wo: wo, seed: maphash.MakeSeed()}
	if err := db.OpenDir(p, p.GetString(PropDir, ""), "pebble-ycsb-"); err != nil {
		return nil, fmt.Errorf("pebbledb: %w", err)
	}
	if db.db, err = pebble.Open(db.Dir(), opts); err != nil {
		return nil, db.RemoveDir(fmt.Errorf("pebbledb: open %s: %w", db.Dir(), err))
	}
	return db, nil
}

// Pebble is the store underneath.
func (db *DB) Pebble() *pebble.DB { return db.db }

// Sync says whether writes are fsynced before they return.
func (db *DB) Sync() bool { return db.wo.Sync }

// Close closes the store, and removes its directory if Open made it.
func (db *DB) Close() error { return db.RemoveDir(db.db.Close()) }

// Read returns the fields of the record (all of them when fields is
// empty); a missing record is an error wrapping [pebble.ErrNotFound].
func (db *DB) Read(_ context.Context, table, key string, fields []string) (map[string][]byte, error) {
	k := record.Key(table, key)
	v, closer, err := db.db.Get(k)
	if err != nil {
		return nil, fmt.Errorf("pebbledb: read %s: %w", k, err)
	}
	// Get's value is Pebble's until closer.Close, and record.Decode's
	// fields alias its input: a copy of the caller's own, as kv.Get
	// returns.
	v = slices.Clone(v)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("pebbledb: read %s: %w", k, err)
	}
	m, err := record.Decode(v, fields)
	if err != nil {
		return nil, fmt.Errorf("pebbledb: read %s: %w", k, err)
	}
	return m, nil
}

// Scan returns up to count records from startKey on, in key order, with
// the fields asked for; it stays within the table, as coopkv's binding
// does.
func (db *DB) Scan(_ context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	if count <= 0 {
		return nil, nil
	}
	it, err := db.db.NewIter(&pebble.IterOptions{
		LowerBound: record.Key(table, startKey),
		UpperBound: record.TableEnd(table),
	})
	if err != nil {
		return nil, fmt.Errorf("pebbledb: scan %s from %q: %w", table, startKey, err)
	}
	rows := make([]map[string][]byte, 0, count)
	for ok := it.First(); ok && len(rows) < count; ok = it.Next() {
		var v []byte
		if v, err = it.ValueAndErr(); err != nil {
			break
		}
		// The value is the iterator's until it moves: copied, as in Read.
		var m map[string][]byte
		if m, err = record.Decode(slices.Clone(v), fields); err != nil {
			err = fmt.Errorf("%s: %w", it.Key(), err)
			break
		}
		rows = append(rows, m)
	}
	// Close returns the iterator's error, if it met one.
	if err = errors.Join(err, it.Close()); err != nil {
		return nil, fmt.Errorf("pebbledb: scan %s from %q: %w", table, startKey, err)
	}
	return rows, nil
}

// Update merges values into the record, its read and its write under the
// key's lock (see the package documentation). A missing record is an
// error wrapping [pebble.ErrNotFound].
func (db *DB) Update(_ context.Context, table, key string, values map[string][]byte) error {
	k := record.Key(table, key)
	enc := record.GetEncoder()
	defer enc.Release()
	mu := db.lock(k)
	defer mu.Unlock()
	v, closer, err := db.db.Get(k)
	if err != nil {
		return fmt.Errorf("pebbledb: update %s: %w", k, err)
	}
	// Merge decodes v in place and encodes into enc's buffer: it is done
	// with v, Pebble's, when it returns, so no copy.
	merged, err := enc.Merge(v, values)
	if err = errors.Join(err, closer.Close()); err != nil {
		return fmt.Errorf("pebbledb: update %s: %w", k, err)
	}
	if db.beforeSet != nil {
		db.beforeSet(k)
	}
	if err := db.db.Set(k, merged, db.wo); err != nil {
		return fmt.Errorf("pebbledb: update %s: %w", k, err)
	}
	return nil
}

// Insert writes the record, replacing one already under key.
func (db *DB) Insert(_ context.Context, table, key string, values map[string][]byte) error {
	k := record.Key(table, key)
	enc := record.GetEncoder()
	defer enc.Release() // Set copies v into its batch
	v, err := enc.Encode(values)
	if err == nil {
		// Under the key's lock: not between an update's read and write.
		mu := db.lock(k)
		err = db.db.Set(k, v, db.wo)
		mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("pebbledb: insert %s: %w", k, err)
	}
	return nil
}

// Delete removes the record; a missing one is not an error.
func (db *DB) Delete(_ context.Context, table, key string) error {
	k := record.Key(table, key)
	// Under the key's lock: an update in flight does not bring it back.
	mu := db.lock(k)
	err := db.db.Delete(k, db.wo)
	mu.Unlock()
	if err != nil {
		return fmt.Errorf("pebbledb: delete %s: %w", k, err)
	}
	return nil
}

// lock locks the stripe of key k and returns it, for the caller to
// unlock.
func (db *DB) lock(k []byte) *sync.Mutex {
	mu := &db.locks[maphash.Bytes(db.seed, k)%stripes]
	mu.Lock()
	return mu
}

// Package badger4db is a go-ycsb binding for badger v4
// (github.com/dgraph-io/badger/v4), beside go-ycsb's own binding for badger
// v1.5.4: the badger that users run today, to compare coopkv with.
//
// Importing the package registers the binding with go-ycsb under the name
// "badger4".
//
// # Records
//
// As in package coopkvdb: a record is one msgpack map of field name to
// value under the key table + ":" + key, encoded by package
// internal/record, so badger and coopkv store the same bytes.
//
// # Settings
//
// badger's documented defaults ([badger.DefaultOptions]: 64 MiB memtables,
// values up to 1 MiB kept in the LSM tree, a 256 MiB block cache, Snappy,
// 4 compactors), with SyncWrites as the property says and badger's log at
// WARNING (its INFO lines are the progress of every compaction). Every
// write is a badger transaction (db.Update); an update reads, merges and
// writes the record in one, and on [badger.ErrConflict] runs again, as
// kv.Update does in coopkv's binding (up to 10 attempts, waiting a random
// time up to 1 ms, 2 ms, … 64 ms between them): badger leaves the retry to
// its users. go-ycsb v1.0.3 has no read-modify-write call (workload F's is
// a Read, then an Update), so the transaction is the Update.
//
// # Properties
//
//	badger4.dir          the store's directory (values and LSM alike); ""
//	                     (default) = a new temporary directory, removed by
//	                     Close
//	badger4.sync_writes  badger's SyncWrites; false (default), as in
//	                     go-ycsb's badger binding
//	dropdata             go-ycsb's: remove badger4.dir before opening
package badger4db

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/binding"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/record"
)

// Name is the binding's name in go-ycsb's registry.
const Name = "badger4"

// The binding's properties; see the package documentation.
const (
	PropDir        = "badger4.dir"
	PropSyncWrites = "badger4.sync_writes"
)

// updateAttempts is how many times an update runs at most, as kv.Update.
const updateAttempts = 10

func init() { ycsb.RegisterDBCreator(Name, binding.Creator[*DB](Open)) }

// DB is a badger v4 store seen as a go-ycsb database; its methods are safe
// for concurrent use.
type DB struct {
	binding.Base
	db *badger.DB
	// beforeSet, when set (tests only), runs in an update's transaction
	// between its read and its write, with the attempt (1 = the first).
	beforeSet func(attempt int, key []byte)
}

var _ ycsb.DB = (*DB)(nil)

// Options returns the badger options for dir that p asks for.
func Options(p *properties.Properties, dir string) (badger.Options, error) {
	sync := false
	if s, ok := p.Get(PropSyncWrites); ok && s != "" {
		var err error
		if sync, err = strconv.ParseBool(s); err != nil {
			return badger.Options{}, fmt.Errorf("badger4db: %s=%q is not a boolean", PropSyncWrites, s)
		}
	}
	return badger.DefaultOptions(dir).WithSyncWrites(sync).WithLoggingLevel(badger.WARNING), nil
}

// Open opens the store that p describes (see the package documentation).
func Open(p *properties.Properties) (*DB, error) {
	db := &DB{}
	if err := db.OpenDir(p, p.GetString(PropDir, ""), "badger4-ycsb-"); err != nil {
		return nil, fmt.Errorf("badger4db: %w", err)
	}
	opts, err := Options(p, db.Dir())
	if err == nil {
		db.db, err = badger.Open(opts)
	}
	if err != nil {
		return nil, db.RemoveDir(fmt.Errorf("badger4db: open %s: %w", db.Dir(), err))
	}
	return db, nil
}

// Badger is the store underneath.
func (db *DB) Badger() *badger.DB { return db.db }

// Close closes the store, and removes its directory if Open made it.
func (db *DB) Close() error { return db.RemoveDir(db.db.Close()) }

// Read returns the fields of the record (all of them when fields is
// empty); a missing record is an error wrapping [badger.ErrKeyNotFound].
func (db *DB) Read(_ context.Context, table, key string, fields []string) (map[string][]byte, error) {
	k := record.Key(table, key)
	var m map[string][]byte
	err := db.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		// A copy of the caller's own, as kv.Get returns: the fields alias it.
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		m, err = record.Decode(v, fields)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("badger4db: read %s: %w", k, err)
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
	rows := make([]map[string][]byte, 0, count)
	err := db.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.Prefix = record.TablePrefix(table)
		// Values are fetched ahead of the iterator: no more than the
		// scan wants.
		opts.PrefetchSize = min(count, opts.PrefetchSize)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek(record.Key(table, startKey)); it.Valid() && len(rows) < count; it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			m, err := record.Decode(v, fields)
			if err != nil {
				return fmt.Errorf("%s: %w", it.Item().Key(), err)
			}
			rows = append(rows, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("badger4db: scan %s from %q: %w", table, startKey, err)
	}
	return rows, nil
}

// Update merges values into the record in one transaction, run again on a
// conflict (see the package documentation). A missing record is an error
// wrapping [badger.ErrKeyNotFound].
func (db *DB) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	k := record.Key(table, key)
	// badger keeps the slices given to Set until the transaction ends: the
	// encoder's buffer is held until then.
	enc := record.GetEncoder()
	defer enc.Release()
	attempt := 0
	err := db.update(ctx, func(txn *badger.Txn) error {
		attempt++
		item, err := txn.Get(k)
		if err != nil {
			return err
		}
		var merged []byte
		// Merge decodes v in place and is done with it when it returns.
		if err := item.Value(func(v []byte) (err error) {
			merged, err = enc.Merge(v, values)
			return err
		}); err != nil {
			return err
		}
		if db.beforeSet != nil {
			db.beforeSet(attempt, k)
		}
		return txn.Set(k, merged)
	})
	if err != nil {
		return fmt.Errorf("badger4db: update %s: %w", k, err)
	}
	return nil
}

// Insert writes the record, replacing one already under key.
func (db *DB) Insert(ctx context.Context, table, key string, values map[string][]byte) error {
	k := record.Key(table, key)
	enc := record.GetEncoder()
	defer enc.Release() // after the commit: badger holds v until then
	v, err := enc.Encode(values)
	if err == nil {
		err = db.update(ctx, func(txn *badger.Txn) error { return txn.Set(k, v) })
	}
	if err != nil {
		return fmt.Errorf("badger4db: insert %s: %w", k, err)
	}
	return nil
}

// Delete removes the record; a missing one is not an error.
func (db *DB) Delete(ctx context.Context, table, key string) error {
	k := record.Key(table, key)
	if err := db.update(ctx, func(txn *badger.Txn) error { return txn.Delete(k) }); err != nil {
		return fmt.Errorf("badger4db: delete %s: %w", k, err)
	}
	return nil
}

// update runs fn in a badger read-write transaction and commits it; on
// badger.ErrConflict it runs it again in a new one, after a random wait,
// until ctx ends or updateAttempts have failed — kv.Update's rule.
func (db *DB) update(ctx context.Context, fn func(txn *badger.Txn) error) error {
	for attempt := 1; ; attempt++ {
		err := db.db.Update(fn)
		if !errors.Is(err, badger.ErrConflict) || attempt == updateAttempts {
			return err
		}
		db.Retried()
		t := time.NewTimer(backoff(attempt))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w after %d attempts: %w", ctx.Err(), attempt, err)
		}
	}
}

// backoff is the wait after the given failed attempt (1 = the first):
// uniformly random up to 1 ms << (attempt-1), at most 64 ms.
func backoff(attempt int) time.Duration {
	ceiling := time.Millisecond << min(attempt-1, 6)
	return time.Duration(rand.Int64N(int64(ceiling))) + 1
}

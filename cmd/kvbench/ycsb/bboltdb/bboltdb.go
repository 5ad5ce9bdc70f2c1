// Package bboltdb is a go-ycsb binding for etcd's bbolt (go.etcd.io/bbolt),
// beside go-ycsb's own binding for github.com/boltdb/bolt v1.3.1, the
// original it forked: the B+tree store that etcd runs today, to compare
// coopkv with.
//
// Importing the package registers the binding with go-ycsb under the name
// "bbolt".
//
// # Records
//
// As in packages coopkvdb and badger4db: a record is one msgpack map of
// field name to value under the key table + ":" + key, encoded by package
// internal/record, so bbolt, badger and coopkv store the same bytes. Each
// table is a bucket of its own, created by the first insert into it; the
// keys in it keep the table's prefix all the same, so the bytes stored
// under a record are the other bindings' too.
//
// # Settings
//
// bbolt's documented defaults ([bbolt.DefaultOptions], what Open takes
// for nil options: no lock timeout, the array freelist, the OS's page
// size), with fsync off as it is for every store the runner compares:
// [bbolt.DB.NoSync] (no fsync at a commit) and [bbolt.Options.NoGrowSync]
// (none after the file grows), both as bbolt.no_sync says. The file is
// bolt.db in the store's directory.
//
// Every write is a bbolt read-write transaction (db.Update). bbolt runs
// one at a time, so an update reads, merges and writes its record in one
// with nothing to conflict with: it never runs again, and TxnRetries stays
// 0. go-ycsb v1.0.3 has no read-modify-write call (workload F's is a Read,
// then an Update), so the transaction is the Update.
//
// # Properties
//
//	bbolt.dir      the store's directory, holding bolt.db; "" (default) =
//	               a new temporary directory, removed by Close
//	bbolt.no_sync  true (default): DB.NoSync and Options.NoGrowSync on;
//	               false: bbolt's defaults, an fsync at every commit
//	dropdata       go-ycsb's: remove bbolt.dir before opening
package bboltdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	bbolt "go.etcd.io/bbolt"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/binding"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/record"
)

// Name is the binding's name in go-ycsb's registry.
const Name = "bbolt"

// The binding's properties; see the package documentation.
const (
	PropDir    = "bbolt.dir"
	PropNoSync = "bbolt.no_sync"
)

// FileName is the name of the store's file in its directory.
const FileName = "bolt.db"

// ErrNotFound is what a read or an update of a missing record wraps: bbolt
// returns a nil value for a missing key, not an error of its own.
var ErrNotFound = errors.New("record not found")

func init() { ycsb.RegisterDBCreator(Name, binding.Creator[*DB](Open)) }

// DB is a bbolt store seen as a go-ycsb database; its methods are safe for
// concurrent use.
type DB struct {
	binding.Base
	db *bbolt.DB
}

var _ ycsb.DB = (*DB)(nil)

// Options returns the bbolt options that p asks for: a copy of
// bbolt.DefaultOptions with NoSync and NoGrowSync as bbolt.no_sync says.
func Options(p *properties.Properties) (*bbolt.Options, error) {
	noSync := true
	if s, ok := p.Get(PropNoSync); ok && s != "" {
		var err error
		if noSync, err = strconv.ParseBool(s); err != nil {
			return nil, fmt.Errorf("bboltdb: %s=%q is not a boolean", PropNoSync, s)
		}
	}
	opts := *bbolt.DefaultOptions // a copy: the default is a package variable
	// Open sets DB.NoSync from Options.NoSync.
	opts.NoSync = noSync
	opts.NoGrowSync = noSync
	return &opts, nil
}

// Open opens the store that p describes (see the package documentation).
func Open(p *properties.Properties) (*DB, error) {
	db := &DB{}
	if err := db.OpenDir(p, p.GetString(PropDir, ""), "bbolt-ycsb-"); err != nil {
		return nil, fmt.Errorf("bboltdb: %w", err)
	}
	opts, err := Options(p)
	if err != nil {
		return nil, db.RemoveDir(err)
	}
	path := filepath.Join(db.Dir(), FileName)
	// bbolt creates its file, not the directory (badger makes its own).
	if err = os.MkdirAll(db.Dir(), 0o755); err == nil {
		db.db, err = bbolt.Open(path, 0o600, opts)
	}
	if err != nil {
		return nil, db.RemoveDir(fmt.Errorf("bboltdb: open %s: %w", path, err))
	}
	return db, nil
}

// Bolt is the store underneath.
func (db *DB) Bolt() *bbolt.DB { return db.db }

// Close closes the store, and removes its directory if Open made it.
func (db *DB) Close() error { return db.RemoveDir(db.db.Close()) }

// Read returns the fields of the record (all of them when fields is
// empty); a missing record, or a missing table, is an error wrapping
// [ErrNotFound].
func (db *DB) Read(_ context.Context, table, key string, fields []string) (map[string][]byte, error) {
	k := record.Key(table, key)
	var m map[string][]byte
	err := db.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(table))
		if b == nil {
			return ErrNotFound
		}
		v := b.Get(k)
		if v == nil {
			return ErrNotFound
		}
		// bbolt's value is its mmap, valid only until the transaction
		// ends, and record.Decode's fields alias what it decodes: a copy
		// of the caller's own, as badger4db's ValueCopy.
		var err error
		m, err = record.Decode(bytes.Clone(v), fields)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bboltdb: read %s: %w", k, err)
	}
	return m, nil
}

// Scan returns up to count records from startKey on, in key order, with
// the fields asked for; it stays within the table's bucket, as coopkv's
// binding stays within the table.
func (db *DB) Scan(_ context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	if count <= 0 {
		return nil, nil
	}
	rows := make([]map[string][]byte, 0, count)
	err := db.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(table))
		if b == nil {
			return nil // no records yet
		}
		c := b.Cursor()
		for k, v := c.Seek(record.Key(table, startKey)); k != nil && len(rows) < count; k, v = c.Next() {
			// A copy, as in Read: v is bbolt's until the View ends.
			m, err := record.Decode(bytes.Clone(v), fields)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			rows = append(rows, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bboltdb: scan %s from %q: %w", table, startKey, err)
	}
	return rows, nil
}

// Update merges values into the record in one read-write transaction (see
// the package documentation). A missing record is an error wrapping
// [ErrNotFound].
func (db *DB) Update(_ context.Context, table, key string, values map[string][]byte) error {
	k := record.Key(table, key)
	// bbolt keeps the value given to Put until the transaction commits:
	// the encoder's buffer is held until then.
	enc := record.GetEncoder()
	defer enc.Release()
	err := db.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(table))
		if b == nil {
			return ErrNotFound
		}
		v := b.Get(k)
		if v == nil {
			return ErrNotFound
		}
		// Merge decodes v in place and is done with it when it returns,
		// its result in enc's buffer: no copy of v is needed.
		merged, err := enc.Merge(v, values)
		if err != nil {
			return err
		}
		return b.Put(k, merged)
	})
	if err != nil {
		return fmt.Errorf("bboltdb: update %s: %w", k, err)
	}
	return nil
}

// Insert writes the record, replacing one already under key, and creates
// the table's bucket if it has none.
func (db *DB) Insert(_ context.Context, table, key string, values map[string][]byte) error {
	k := record.Key(table, key)
	enc := record.GetEncoder()
	defer enc.Release() // after the commit: bbolt holds v until then
	v, err := enc.Encode(values)
	if err == nil {
		err = db.db.Update(func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte(table))
			if err != nil {
				return err
			}
			return b.Put(k, v)
		})
	}
	if err != nil {
		return fmt.Errorf("bboltdb: insert %s: %w", k, err)
	}
	return nil
}

// Delete removes the record; a missing one, or a missing table, is not an
// error.
func (db *DB) Delete(_ context.Context, table, key string) error {
	k := record.Key(table, key)
	err := db.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(table))
		if b == nil {
			return nil
		}
		return b.Delete(k)
	})
	if err != nil {
		return fmt.Errorf("bboltdb: delete %s: %w", k, err)
	}
	return nil
}

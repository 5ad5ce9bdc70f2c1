package main

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"unsafe"

	"github.com/boltdb/bolt"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/badger4db"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/bboltdb"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/coopkvdb"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/pebbledb"

	// go-ycsb's bindings register themselves under "badger" and "boltdb".
	// Only these two are imported: go-ycsb's own command imports every
	// driver it has, and with them half of the cloud.
	_ "github.com/pingcap/go-ycsb/db/badger"
	_ "github.com/pingcap/go-ycsb/db/boltdb"
)

// store is one column of the comparison: a go-ycsb binding and the
// properties it is opened with.
type store struct {
	// driver is the binding's name in go-ycsb's registry.
	driver string
	// props are the binding's properties for a store in dir.
	props func(dir string) map[string]string
	// opened adjusts what the binding opened, for a setting it has no
	// property for; nil = nothing to do.
	opened func(db ycsb.DB) error
	// about says in a line what the store is, for the report.
	about string
}

// knownStores are the stores --stores may name. None of them fsyncs a
// write before it returns: YCSB compares the stores' engines, not the
// disk's flush latency.
var knownStores = map[string]store{
	"coopkv-mlfq":   coopkvStore("mlfq"),
	"coopkv-fifo":   coopkvStore("fifo"),
	"coopkv-direct": coopkvStore("direct"),
	"badger": {
		driver: "badger",
		props: func(dir string) map[string]string {
			return map[string]string{
				"badger.dir":      filepath.Join(dir, "badger"),
				"badger.valuedir": filepath.Join(dir, "badger"),
				// The binding's default too, said here so the report shows it.
				"badger.sync_writes": "false",
			}
		},
		about: "github.com/dgraph-io/badger v1.5.4 through go-ycsb's db/badger; SyncWrites off, the binding's other defaults",
	},
	"badger-v4": {
		driver: badger4db.Name,
		props: func(dir string) map[string]string {
			return map[string]string{
				badger4db.PropDir: filepath.Join(dir, "badger4"),
				// badger's default too, said here so the report shows it.
				badger4db.PropSyncWrites: "false",
			}
		},
		about: "github.com/dgraph-io/badger/v4 " + depVersion("github.com/dgraph-io/badger/v4") + " through package badger4db; badger's defaults, SyncWrites off, coopkv's record codec, updates in one transaction retried on conflict",
	},
	"bolt": {
		driver: "boltdb",
		props: func(dir string) map[string]string {
			return map[string]string{
				"bolt.path": filepath.Join(dir, "bolt.db"),
				// No fsync after the file grows.
				"bolt.no_grow_sync": "true",
			}
		},
		opened: setBoltNoSync,
		about:  "github.com/boltdb/bolt v1.3.1 (the original of etcd's bbolt) through go-ycsb's db/boltdb; NoSync and NoGrowSync on",
	},
	"bbolt": {
		driver: bboltdb.Name,
		props: func(dir string) map[string]string {
			return map[string]string{
				bboltdb.PropDir: filepath.Join(dir, "bbolt"),
				// fsync off, as for the other stores.
				bboltdb.PropNoSync: "true",
			}
		},
		about: "go.etcd.io/bbolt " + depVersion("go.etcd.io/bbolt") + " through package bboltdb; bbolt's defaults, NoSync and NoGrowSync on, coopkv's record codec, a bucket per table",
	},
	"pebble": {
		driver: pebbledb.Name,
		props: func(dir string) map[string]string {
			return map[string]string{
				pebbledb.PropDir: filepath.Join(dir, "pebble"),
				// Pebble's default too, said here so the report shows it.
				pebbledb.PropSync: "false",
			}
		},
		about: "github.com/cockroachdb/pebble/v2 " + depVersion("github.com/cockroachdb/pebble/v2") + " through package pebbledb; Pebble's defaults (8 MiB block cache), NoSync writes, coopkv's record codec, updates under a per-key write lock",
	},
}

// coopkvStore is coopkv with the given read scheduler, through package
// coopkvdb, its writes unsynced (kv.Options.NoSync), its updates
// transactions.
func coopkvStore(scheduler string) store {
	return store{
		driver: coopkvdb.Name,
		props: func(dir string) map[string]string {
			return map[string]string{
				coopkvdb.PropDir:       filepath.Join(dir, "coopkv"),
				coopkvdb.PropScheduler: scheduler,
				coopkvdb.PropNoSync:    "true",
				// Updates, F's read-modify-writes among them, in kv.Update;
				// -p coopkv.txn=false measures a plain Get then Set.
				coopkvdb.PropTxn: "true",
				// kv's default too, said here so the report shows it: the
				// caches warm themselves, after a reopen from the hot set
				// saved at the close (-p coopkv.nowarm=true turns it off).
				coopkvdb.PropNoWarm: "false",
			}
		},
		about: "coopkv (this repository) through package coopkvdb, scheduler " + scheduler + "; NoSync, updates in kv.Update unless coopkv.txn=false, kv's default caches and workers",
	}
}

// storeNames are the names of knownStores, sorted.
func storeNames() []string { return slices.Sorted(maps.Keys(knownStores)) }

// storeProps are the properties store s is opened with in dir: its own,
// then extra (name=value), which win.
func storeProps(s store, dir string, extra []string) map[string]string {
	m := s.props(dir)
	for _, p := range extra {
		name, value, _ := cutProp(p)
		m[name] = value
	}
	return m
}

// openStore opens s with the properties p.
func openStore(s store, p *properties.Properties) (ycsb.DB, error) {
	c := ycsb.GetDBCreator(s.driver)
	if c == nil {
		return nil, fmt.Errorf("go-ycsb has no binding %q", s.driver)
	}
	db, err := c.Create(p)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", s.driver, err)
	}
	if s.opened != nil {
		if err := s.opened(db); err != nil {
			return nil, errors.Join(fmt.Errorf("open %s: %w", s.driver, err), db.Close())
		}
	}
	return db, nil
}

// boltHandle returns the *bolt.DB inside go-ycsb's bolt binding.
//
// The binding keeps it in an unexported field (boltDB.db) and has no
// property for bolt's DB.NoSync, which is a field of the DB, not of
// bolt.Options. So it is reached by reflection: the field is found by name
// and checked for its type, and reflect.NewAt makes an addressable,
// settable view of it. A go-ycsb whose binding looks otherwise makes this
// an error, never a silent fsync.
func boltHandle(db ycsb.DB) (*bolt.DB, error) {
	v := reflect.ValueOf(db)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("bolt binding is a %T, not a pointer to a struct", db)
	}
	f := v.Elem().FieldByName("db")
	want := reflect.TypeFor[*bolt.DB]()
	if !f.IsValid() || f.Type() != want {
		return nil, fmt.Errorf("bolt binding %T has no field db of type %v", db, want)
	}
	bdb := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(*bolt.DB)
	if bdb == nil {
		return nil, fmt.Errorf("bolt binding %T has a nil db", db)
	}
	return bdb, nil
}

// setBoltNoSync turns off bolt's fsync at every commit. It runs before
// the first transaction, so no commit races with the write.
func setBoltNoSync(db ycsb.DB) error {
	bdb, err := boltHandle(db)
	if err != nil {
		return err
	}
	bdb.NoSync = true
	return nil
}

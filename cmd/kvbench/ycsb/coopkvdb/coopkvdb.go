// Package coopkvdb is a go-ycsb binding for coopkv: it lets go-ycsb's core
// workloads (YCSB A–F) drive an embedded [kv.DB], so that coopkv is measured
// by the same client, key chooser and histograms as the stores go-ycsb
// ships bindings for.
//
// Importing the package registers the binding with go-ycsb under the name
// "coopkv", as go-ycsb's own bindings register themselves.
//
// # Records
//
// A record is one msgpack map of field name to value (msgpack bin), stored
// under the key table + ":" + key — the layout of go-ycsb's badger binding,
// with coopkv's row encoding (the coprocessor reads such rows as they are),
// the codec of package internal/record, which the runner's badger v4
// binding shares. Read decodes only the fields asked for and skips the
// rest.
//
// # Properties
//
//	coopkv.dir         the store's directory; "" (default) = a new temporary
//	                   directory, removed by Close
//	coopkv.scheduler   mlfq (default), fifo or direct: kv.Options.Scheduler
//	coopkv.rowcache    kv.Options.RowCacheSize in bytes; 0 (default) = kv's
//	                   default, < 0 = off
//	coopkv.blockcache  kv.Options.CacheSize (Pebble's block cache) in bytes;
//	                   0 (default) = kv's default
//	coopkv.workers     kv.Options.Workers; 0 (default) = GOMAXPROCS
//	coopkv.nosync      kv.Options.NoSync; true (default): writes return
//	                   before the WAL is fsynced, as go-ycsb's badger binding
//	                   leaves SyncWrites off
//	coopkv.txn         true (default): Update (and BatchUpdate) reads, merges
//	                   and writes in one kv.Update transaction; false: a
//	                   plain Get, then a Set (see Updates)
//	coopkv.nowarm      kv.Options.NoWarm; false (default): the caches warm
//	                   themselves in the background, and after an open from
//	                   the hot set saved at the last close
//	dropdata           go-ycsb's: remove coopkv.dir before opening
//
// # Updates
//
// A YCSB update writes some fields of a record, so the binding reads the
// record, merges the fields in and writes it back. go-ycsb v1.0.3 has no
// call of its own for a read-modify-write: workload F's is a Read and then
// an Update of the same key, each timed alone and both together. So, as
// go-ycsb's badger binding does, the transaction is the Update: its read,
// merge and write are one serializable [kv.Txn] through [kv.Update], which
// runs it again on [kv.ErrConflict] (up to 10 attempts, with its backoff);
// TxnRetries counts the attempts past the first. The Read before it, as in
// badger's binding, is a plain Get outside the transaction.
//
// With coopkv.txn=false the update is a Get followed by a Set: two
// updaters of one key at once may lose one's fields (last writer wins on
// the whole record), as in go-ycsb's bindings for stores without
// transactions. It is kept to measure what the transaction costs.
package coopkvdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/binding"
	"github.com/coopkv/coopkv/cmd/kvbench/ycsb/internal/record"
	"github.com/coopkv/coopkv/kv"
)

// Name is the binding's name in go-ycsb's registry.
const Name = "coopkv"

// The binding's properties; see the package documentation.
const (
	PropDir        = "coopkv.dir"
	PropScheduler  = "coopkv.scheduler"
	PropRowCache   = "coopkv.rowcache"
	PropBlockCache = "coopkv.blockcache"
	PropWorkers    = "coopkv.workers"
	PropNoSync     = "coopkv.nosync"
	PropTxn        = "coopkv.txn"
	PropNoWarm     = "coopkv.nowarm"
)

// go-ycsb finds a binding by name in a registry that its packages fill on
// import (db/badger, db/boltdb do the same), so registering is the one
// thing this init does.
func init() { ycsb.RegisterDBCreator(Name, binding.Creator[*DB](Open)) }

// DB is a coopkv store seen as a go-ycsb database. It implements
// [ycsb.DB] and [ycsb.BatchDB]; its methods are safe for concurrent use.
type DB struct {
	binding.Base
	kv *kv.DB
	// txn says updates run in kv.Update (coopkv.txn).
	txn bool
	// beforeSet, when set (tests only), runs in an update's transaction
	// between its read and its write, with the attempt (1 = the first).
	beforeSet func(attempt int, key []byte)
}

var (
	_ ycsb.DB      = (*DB)(nil)
	_ ycsb.BatchDB = (*DB)(nil)
)

// Settings are what the properties ask for.
type Settings struct {
	// Dir is the store's directory; "" = a temporary one.
	Dir string
	// KV are the store's options.
	KV *kv.Options
	// Txn says updates run in kv.Update (coopkv.txn).
	Txn bool
}

// ParseSettings returns the settings that p asks for, and every problem
// with p at once.
func ParseSettings(p *properties.Properties) (Settings, error) {
	var errs []error
	intProp := func(name string) int64 {
		s, ok := p.Get(name)
		if !ok || s == "" {
			return 0
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("coopkvdb: %s=%q is not an integer", name, s))
		}
		return n
	}
	opts := &kv.Options{
		Scheduler:    kv.Scheduler(p.GetString(PropScheduler, string(kv.SchedulerMLFQ))),
		RowCacheSize: intProp(PropRowCache),
		CacheSize:    intProp(PropBlockCache),
		Workers:      int(intProp(PropWorkers)),
	}
	switch opts.Scheduler {
	case "":
		opts.Scheduler = kv.SchedulerMLFQ
	case kv.SchedulerMLFQ, kv.SchedulerFIFO, kv.SchedulerDirect:
	default:
		errs = append(errs, fmt.Errorf("coopkvdb: %s=%q: want mlfq, fifo or direct", PropScheduler, opts.Scheduler))
	}
	boolProp := func(name string, def bool) bool {
		s, ok := p.Get(name)
		if !ok || s == "" {
			return def
		}
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("coopkvdb: %s=%q is not a boolean", name, s))
		}
		return b
	}
	opts.NoSync = boolProp(PropNoSync, true)
	opts.NoWarm = boolProp(PropNoWarm, false)
	txn := boolProp(PropTxn, true)
	return Settings{Dir: p.GetString(PropDir, ""), KV: opts, Txn: txn}, errors.Join(errs...)
}

// Open opens the store that p describes (see the package documentation).
func Open(p *properties.Properties) (*DB, error) {
	set, err := ParseSettings(p)
	if err != nil {
		return nil, err
	}
	db := &DB{txn: set.Txn}
	if err := db.OpenDir(p, set.Dir, "coopkv-ycsb-"); err != nil {
		return nil, fmt.Errorf("coopkvdb: %w", err)
	}
	if db.kv, err = kv.Open(db.Dir(), set.KV); err != nil {
		return nil, db.RemoveDir(fmt.Errorf("coopkvdb: open %s: %w", db.Dir(), err))
	}
	return db, nil
}

// KV is the store underneath, for what go-ycsb's interface has no call for
// (stats, flushing after a load).
func (db *DB) KV() *kv.DB { return db.kv }

// Txn says updates run in kv.Update (coopkv.txn).
func (db *DB) Txn() bool { return db.txn }

// Close closes the store, and removes its directory if Open made it.
func (db *DB) Close() error { return db.RemoveDir(db.kv.Close()) }

// Read returns the fields of the record (all of them when fields is
// empty); a missing record is an error wrapping [kv.ErrNotFound].
func (db *DB) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	k := record.Key(table, key)
	v, err := db.kv.Get(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("coopkvdb: read %s: %w", k, err)
	}
	m, err := record.Decode(v, fields)
	if err != nil {
		return nil, fmt.Errorf("coopkvdb: read %s: %w", k, err)
	}
	return m, nil
}

// BatchRead reads each key in turn; a missing one fails the batch.
func (db *DB) BatchRead(ctx context.Context, table string, keys []string, fields []string) ([]map[string][]byte, error) {
	rows := make([]map[string][]byte, len(keys))
	for i, key := range keys {
		m, err := db.Read(ctx, table, key, fields)
		if err != nil {
			return nil, err
		}
		rows[i] = m
	}
	return rows, nil
}

// Scan returns up to count records from startKey on, in key order, with
// the fields asked for.
func (db *DB) Scan(ctx context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	if count <= 0 {
		return nil, nil
	}
	it := db.kv.Scan(ctx, record.Key(table, startKey), record.TableEnd(table), &kv.ScanOptions{Limit: count})
	defer it.Close()
	rows := make([]map[string][]byte, 0, count)
	for it.Next() {
		// Value is valid until Next: one copy, which the fields alias.
		m, err := record.Decode(bytes.Clone(it.Value()), fields)
		if err != nil {
			return nil, fmt.Errorf("coopkvdb: scan %s: %w", it.Key(), err)
		}
		rows = append(rows, m)
	}
	// Read to its end (the Limit stops it): an iterator that ends so gives
	// its buffers to the next scan.
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("coopkvdb: scan %s from %q: %w", table, startKey, err)
	}
	return rows, nil
}

// Update merges values into the record: in one transaction, or a Get and
// then a Set with coopkv.txn=false (see the package documentation). A
// missing record is an error wrapping [kv.ErrNotFound].
func (db *DB) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	k := record.Key(table, key)
	if db.txn {
		return db.mergeTxn(ctx, "update", [][]byte{k}, []map[string][]byte{values})
	}
	merged, err := db.merge(ctx, k, values)
	if err != nil {
		return err
	}
	return db.set(k, merged)
}

// merge returns the record under k with values written over it.
func (db *DB) merge(ctx context.Context, k []byte, values map[string][]byte) (map[string][]byte, error) {
	v, err := db.kv.Get(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("coopkvdb: update %s: %w", k, err)
	}
	m, err := record.Decode(v, nil)
	if err != nil {
		return nil, fmt.Errorf("coopkvdb: update %s: %w", k, err)
	}
	for f, fv := range values {
		m[f] = fv
	}
	return m, nil
}

// mergeTxn merges values[i] into the record under keys[i], for every i, in
// one kv.Update. what names the call in errors.
func (db *DB) mergeTxn(ctx context.Context, what string, keys [][]byte, values []map[string][]byte) error {
	enc := record.GetEncoder()
	defer enc.Release()
	var (
		attempts int
		fnErr    error // fn's own error, already said in full
	)
	err := kv.Update(ctx, db.kv, func(tx *kv.Txn) error {
		if attempts++; attempts > 1 {
			db.Retried()
		}
		for i, k := range keys {
			v, err := tx.Get(ctx, k)
			if err == nil {
				// v is the Txn's copy, so merged may alias it; Set copies
				// merged before enc is used again.
				var merged []byte
				if merged, err = enc.Merge(v, values[i]); err == nil {
					if db.beforeSet != nil {
						db.beforeSet(attempts, k)
					}
					err = tx.Set(k, merged)
				}
			}
			if err != nil {
				fnErr = fmt.Errorf("coopkvdb: %s %s: %w", what, k, err)
				return fnErr
			}
		}
		return nil
	})
	if err == nil || err == fnErr {
		return err
	}
	// A conflict at the last attempt, a closed store, ctx.
	if len(keys) > 1 {
		return fmt.Errorf("coopkvdb: %s %s and %d more: %w", what, keys[0], len(keys)-1, err)
	}
	return fmt.Errorf("coopkvdb: %s %s: %w", what, keys[0], err)
}

// BatchUpdate merges values[i] into the record of keys[i], for every i,
// and writes the merged records atomically: in one transaction, or with
// coopkv.txn=false read one by one and written in one batch.
func (db *DB) BatchUpdate(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("coopkvdb: batch update: %d keys, %d values", len(keys), len(values))
	}
	if len(keys) == 0 {
		return nil
	}
	if db.txn {
		ks := make([][]byte, len(keys))
		for i, key := range keys {
			ks[i] = record.Key(table, key)
		}
		return db.mergeTxn(ctx, "batch update", ks, values)
	}
	b := db.kv.NewBatch()
	for i, key := range keys {
		k := record.Key(table, key)
		m, err := db.merge(ctx, k, values[i])
		if err != nil {
			return err
		}
		if err := addSet(b, k, m); err != nil {
			return err
		}
	}
	return db.apply(b, "batch update")
}

// Insert writes the record, replacing one already under key.
func (db *DB) Insert(_ context.Context, table, key string, values map[string][]byte) error {
	return db.set(record.Key(table, key), values)
}

// BatchInsert writes the records in one atomic batch.
func (db *DB) BatchInsert(_ context.Context, table string, keys []string, values []map[string][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("coopkvdb: batch insert: %d keys, %d values", len(keys), len(values))
	}
	b := db.kv.NewBatch()
	for i, key := range keys {
		if err := addSet(b, record.Key(table, key), values[i]); err != nil {
			return err
		}
	}
	return db.apply(b, "batch insert")
}

// Delete removes the record; a missing one is not an error.
func (db *DB) Delete(_ context.Context, table, key string) error {
	k := record.Key(table, key)
	if err := db.kv.Delete(k); err != nil {
		return fmt.Errorf("coopkvdb: delete %s: %w", k, err)
	}
	return nil
}

// BatchDelete removes the records in one atomic batch.
func (db *DB) BatchDelete(_ context.Context, table string, keys []string) error {
	b := db.kv.NewBatch()
	for _, key := range keys {
		b.Delete(record.Key(table, key))
	}
	return db.apply(b, "batch delete")
}

func (db *DB) set(k []byte, values map[string][]byte) error {
	enc := record.GetEncoder()
	defer enc.Release()
	v, err := enc.Encode(values)
	if err != nil {
		return fmt.Errorf("coopkvdb: write %s: %w", k, err)
	}
	// Set keeps its own copy of v, so the buffer goes back to the pool.
	if err := db.kv.Set(k, v); err != nil {
		return fmt.Errorf("coopkvdb: write %s: %w", k, err)
	}
	return nil
}

func (db *DB) apply(b *kv.Batch, what string) error {
	if err := db.kv.Apply(b); err != nil {
		return fmt.Errorf("coopkvdb: %s of %d records: %w", what, b.Len(), err)
	}
	return nil
}

// addSet adds the write of a record to b, which copies it.
func addSet(b *kv.Batch, k []byte, values map[string][]byte) error {
	enc := record.GetEncoder()
	defer enc.Release()
	v, err := enc.Encode(values)
	if err != nil {
		return fmt.Errorf("coopkvdb: write %s: %w", k, err)
	}
	b.Set(k, v)
	return nil
}

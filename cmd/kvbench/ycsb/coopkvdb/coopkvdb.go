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
// with coopkv's row encoding (the coprocessor reads such rows as they are).
// Read decodes only the fields asked for and skips the rest.
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
//	dropdata           go-ycsb's: remove coopkv.dir before opening
//
// # Caveats
//
// Update is a Get followed by a Set: two updaters of one key at once may
// lose one's fields (last writer wins on the whole record). go-ycsb's core
// workloads tolerate this, as do its bindings for stores without
// transactions; YCSB measures throughput and latency, not isolation.
package coopkvdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
	"github.com/vmihailenco/msgpack/v5"

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
)

// go-ycsb finds a binding by name in a registry that its packages fill on
// import (db/badger, db/boltdb do the same), so registering is the one
// thing this init does.
func init() { ycsb.RegisterDBCreator(Name, creator{}) }

type creator struct{}

func (creator) Create(p *properties.Properties) (ycsb.DB, error) {
	db, err := Open(p)
	if err != nil {
		return nil, err // not a nil *DB in a non-nil interface
	}
	return db, nil
}

// DB is a coopkv store seen as a go-ycsb database. It implements
// [ycsb.DB] and [ycsb.BatchDB]; its methods are safe for concurrent use.
type DB struct {
	kv *kv.DB
	// dir is the store's directory; removeDir says Close removes it (a
	// temporary directory of Open's own).
	dir       string
	removeDir bool
}

var (
	_ ycsb.DB      = (*DB)(nil)
	_ ycsb.BatchDB = (*DB)(nil)
)

// Options returns the kv options and directory that p asks for, and every
// problem with p at once.
func Options(p *properties.Properties) (dir string, opts *kv.Options, err error) {
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
	opts = &kv.Options{
		Scheduler:    kv.Scheduler(p.GetString(PropScheduler, string(kv.SchedulerMLFQ))),
		RowCacheSize: intProp(PropRowCache),
		CacheSize:    intProp(PropBlockCache),
		Workers:      int(intProp(PropWorkers)),
		NoSync:       true,
	}
	switch opts.Scheduler {
	case "":
		opts.Scheduler = kv.SchedulerMLFQ
	case kv.SchedulerMLFQ, kv.SchedulerFIFO, kv.SchedulerDirect:
	default:
		errs = append(errs, fmt.Errorf("coopkvdb: %s=%q: want mlfq, fifo or direct", PropScheduler, opts.Scheduler))
	}
	if s, ok := p.Get(PropNoSync); ok {
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("coopkvdb: %s=%q is not a boolean", PropNoSync, s))
		}
		opts.NoSync = b
	}
	return p.GetString(PropDir, ""), opts, errors.Join(errs...)
}

// Open opens the store that p describes (see the package documentation).
func Open(p *properties.Properties) (*DB, error) {
	dir, opts, err := Options(p)
	if err != nil {
		return nil, err
	}
	db := &DB{dir: dir}
	if dir == "" {
		if db.dir, err = os.MkdirTemp("", "coopkv-ycsb-"); err != nil {
			return nil, fmt.Errorf("coopkvdb: %w", err)
		}
		db.removeDir = true
	} else if p.GetBool(prop.DropData, prop.DropDataDefault) {
		if err := os.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("coopkvdb: drop data: %w", err)
		}
	}
	if db.kv, err = kv.Open(db.dir, opts); err != nil {
		if db.removeDir {
			_ = os.RemoveAll(db.dir)
		}
		return nil, fmt.Errorf("coopkvdb: open %s: %w", db.dir, err)
	}
	return db, nil
}

// KV is the store underneath, for what go-ycsb's interface has no call for
// (stats, flushing after a load).
func (db *DB) KV() *kv.DB { return db.kv }

// Close closes the store, and removes its directory if Open made it.
func (db *DB) Close() error {
	err := db.kv.Close()
	if db.removeDir {
		err = errors.Join(err, os.RemoveAll(db.dir))
	}
	return err
}

// InitThread returns ctx: the binding keeps no per-thread state.
func (db *DB) InitThread(ctx context.Context, _, _ int) context.Context { return ctx }

// CleanupThread does nothing.
func (db *DB) CleanupThread(context.Context) {}

// rowKey is the store key of a record: table + ":" + key.
func rowKey(table, key string) []byte {
	k := make([]byte, 0, len(table)+1+len(key))
	k = append(k, table...)
	k = append(k, ':')
	return append(k, key...)
}

// tableEnd is the first key past every record of table: ';' follows ':'.
func tableEnd(table string) []byte {
	return append([]byte(table), ':'+1)
}

// Read returns the fields of the record (all of them when fields is
// empty); a missing record is an error wrapping [kv.ErrNotFound].
func (db *DB) Read(ctx context.Context, table, key string, fields []string) (map[string][]byte, error) {
	k := rowKey(table, key)
	v, err := db.kv.Get(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("coopkvdb: read %s: %w", k, err)
	}
	m, err := decodeRecord(v, fields)
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
	it := db.kv.Scan(ctx, rowKey(table, startKey), tableEnd(table), &kv.ScanOptions{Limit: count})
	defer it.Close()
	rows := make([]map[string][]byte, 0, count)
	for it.Next() {
		// Value is valid until Next: one copy, which the fields alias.
		m, err := decodeRecord(bytes.Clone(it.Value()), fields)
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

// Update merges values into the record: a Get, then a Set of the merged
// record. It is not atomic against another Update of the same key (see the
// package documentation). A missing record is an error wrapping
// [kv.ErrNotFound].
func (db *DB) Update(ctx context.Context, table, key string, values map[string][]byte) error {
	k := rowKey(table, key)
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
	m, err := decodeRecord(v, nil)
	if err != nil {
		return nil, fmt.Errorf("coopkvdb: update %s: %w", k, err)
	}
	for f, fv := range values {
		m[f] = fv
	}
	return m, nil
}

// BatchUpdate merges values[i] into the record of keys[i], for every i,
// and writes the merged records in one atomic batch.
func (db *DB) BatchUpdate(ctx context.Context, table string, keys []string, values []map[string][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("coopkvdb: batch update: %d keys, %d values", len(keys), len(values))
	}
	b := db.kv.NewBatch()
	for i, key := range keys {
		k := rowKey(table, key)
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
	return db.set(rowKey(table, key), values)
}

// BatchInsert writes the records in one atomic batch.
func (db *DB) BatchInsert(_ context.Context, table string, keys []string, values []map[string][]byte) error {
	if len(keys) != len(values) {
		return fmt.Errorf("coopkvdb: batch insert: %d keys, %d values", len(keys), len(values))
	}
	b := db.kv.NewBatch()
	for i, key := range keys {
		if err := addSet(b, rowKey(table, key), values[i]); err != nil {
			return err
		}
	}
	return db.apply(b, "batch insert")
}

// Delete removes the record; a missing one is not an error.
func (db *DB) Delete(_ context.Context, table, key string) error {
	k := rowKey(table, key)
	if err := db.kv.Delete(k); err != nil {
		return fmt.Errorf("coopkvdb: delete %s: %w", k, err)
	}
	return nil
}

// BatchDelete removes the records in one atomic batch.
func (db *DB) BatchDelete(_ context.Context, table string, keys []string) error {
	b := db.kv.NewBatch()
	for _, key := range keys {
		b.Delete(rowKey(table, key))
	}
	return db.apply(b, "batch delete")
}

func (db *DB) set(k []byte, values map[string][]byte) error {
	enc := getEncoder()
	defer putEncoder(enc)
	v, err := enc.encode(values)
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
	enc := getEncoder()
	defer putEncoder(enc)
	v, err := enc.encode(values)
	if err != nil {
		return fmt.Errorf("coopkvdb: write %s: %w", k, err)
	}
	b.Set(k, v)
	return nil
}

// recordEncoder encodes records into a buffer it reuses: the bytes of
// encode are valid until the encoder goes back to the pool.
type recordEncoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &recordEncoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

func getEncoder() *recordEncoder { return encoders.Get().(*recordEncoder) }

func putEncoder(e *recordEncoder) {
	if e.buf.Cap() > 64<<10 {
		return // an outsized record; let the buffer go
	}
	encoders.Put(e)
}

// encode returns values as one msgpack map of string to bin, in field
// name order, so that a record's bytes depend on its contents only.
func (e *recordEncoder) encode(values map[string][]byte) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.EncodeMapLen(len(values)); err != nil {
		return nil, err
	}
	var small [16]string
	names := small[:0]
	for f := range values {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		if err := e.enc.EncodeString(f); err != nil {
			return nil, err
		}
		if err := e.enc.EncodeBytes(values[f]); err != nil {
			return nil, err
		}
	}
	return e.buf.Bytes(), nil
}

// recordDecoder reads one record in place. names interns the field names
// it has met, so that a record of known fields costs one allocation (its
// map); a record with unusual names costs one string each past maxNames.
type recordDecoder struct {
	r     bytes.Reader
	dec   *msgpack.Decoder
	names map[string]string
}

const maxNames = 256

var decoders = sync.Pool{New: func() any {
	return &recordDecoder{dec: msgpack.NewDecoder(nil), names: make(map[string]string)}
}}

// decodeRecord decodes the fields of the record b (every field when fields
// is empty) and skips the others. The values alias b, as go-ycsb's own
// row codec does: b must be the caller's to give away (kv.Get's result is).
func decodeRecord(b []byte, fields []string) (map[string][]byte, error) {
	d := decoders.Get().(*recordDecoder)
	defer func() {
		d.dec.Reset(nil)
		decoders.Put(d)
	}()
	d.r.Reset(b)
	d.dec.Reset(&d.r) // a bytes.Reader is an io.ByteScanner: no bufio in between
	n, err := d.dec.DecodeMapLen()
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	size := n
	if len(fields) > 0 {
		size = min(n, len(fields))
	}
	m := make(map[string][]byte, max(size, 0))
	for range n {
		name, err := d.inPlace(b)
		if err != nil {
			return nil, fmt.Errorf("record field name: %w", err)
		}
		f, wanted := d.name(name, fields)
		if !wanted {
			if err := d.dec.Skip(); err != nil {
				return nil, fmt.Errorf("record field %s: %w", name, err)
			}
			continue
		}
		v, err := d.inPlace(b)
		if err != nil {
			return nil, fmt.Errorf("record field %s: %w", f, err)
		}
		m[f] = v
	}
	return m, nil
}

// inPlace reads the next str or bin header and returns its bytes as a
// slice of b, the decoder's input, capped so an append cannot reach past
// them.
func (d *recordDecoder) inPlace(b []byte) ([]byte, error) {
	n, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, err
	}
	if n < 0 { // nil
		return nil, nil
	}
	off := len(b) - d.r.Len()
	if n > d.r.Len() {
		return nil, fmt.Errorf("msgpack: %d bytes wanted, %d left: %w", n, d.r.Len(), io.ErrUnexpectedEOF)
	}
	if _, err := d.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, err
	}
	return b[off : off+n : off+n], nil
}

// name returns the field name as a string, and whether it is one of
// fields (every name is when fields is empty), without allocating for a
// name in fields or one met before.
func (d *recordDecoder) name(name []byte, fields []string) (string, bool) {
	if len(fields) > 0 {
		for _, f := range fields {
			if f == string(name) {
				return f, true
			}
		}
		return "", false
	}
	if f, ok := d.names[string(name)]; ok {
		return f, true
	}
	f := string(name)
	if len(d.names) < maxNames {
		d.names[f] = f
	}
	return f, true
}

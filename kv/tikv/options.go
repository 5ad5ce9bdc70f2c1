package tikv

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/coopkv/coopkv/kv"
)

// DefaultPrefix is the key prefix of a store whose Options.Prefix is nil.
const DefaultPrefix = "coopkv/"

// Defaults of Options.
const (
	// DefaultGCLifetime is how long old versions are kept (TiDB's
	// tidb_gc_life_time default): a snapshot may be read this long after
	// the write that superseded what it reads, and longer while it is
	// open.
	DefaultGCLifetime = 10 * time.Minute
	// DefaultGCInterval is how often the store advances the safe point.
	DefaultGCInterval = time.Minute
	// DefaultSweepInterval is how often a store tries to take the sweep
	// lease and, holding it, sweeps expired keys (sweep.go).
	DefaultSweepInterval = 10 * time.Second
	// DefaultMaxDeleteRangeKeys bounds the keys one Write's DeleteRanges
	// delete: they are deleted key by key inside the Write's transaction,
	// which TiKV holds in memory and limits in size.
	DefaultMaxDeleteRangeKeys = 100_000
	// DefaultWriteRetries is how many times a Write with a DeleteRange
	// tries a transaction that met a write conflict.
	DefaultWriteRetries = 10
	// DefaultCoprocessorConcurrency is how many regions of a coprocessor
	// range are read at once.
	DefaultCoprocessorConcurrency = 4
	// DefaultMaxTxnBytes bounds one transaction's buffered writes, as
	// the embedded store's default does.
	DefaultMaxTxnBytes = 64 << 20
)

// Options configures a Store. Nil options and zero fields mean the
// defaults.
type Options struct {
	// Prefix starts every key the store writes and reads; nil =
	// DefaultPrefix. The store owns the keys under it, so a scan with an
	// open bound — a reverse one too — still has finite bounds on TiKV,
	// and several stores (applications, tenants) can share one cluster
	// under different prefixes. It must not be empty nor all 0xff bytes.
	Prefix []byte
	// Logger receives the store's own records and client-go's (warnings
	// and errors; with VerboseClientLogs its informational records too);
	// nil = discard. client-go logs through one process-wide logger: while
	// several stores are open, the most recently opened one's Logger
	// receives its records.
	Logger *slog.Logger
	// VerboseClientLogs passes client-go's INFO records to Logger too.
	VerboseClientLogs bool
	// GCLifetime is how long versions superseded by a write stay readable
	// (for snapshots); 0 = DefaultGCLifetime; negative = the store runs no
	// GC (another client, e.g. TiDB, owns it). The safe point never passes
	// the oldest snapshot, scan or Txn open in this store.
	GCLifetime time.Duration
	// GCInterval is how often the safe point is advanced; 0 =
	// DefaultGCInterval.
	GCInterval time.Duration
	// SweepInterval is how often the store tries to take the sweep lease
	// of its prefix and, holding it, deletes the expired keys under the
	// prefix (one client of those sharing a prefix sweeps at a time; see
	// sweep.go); 0 = DefaultSweepInterval; negative = never: another
	// client sweeps, or nobody does and expired keys stay, unread, until
	// overwritten or deleted.
	SweepInterval time.Duration
	// MaxDeleteRangeKeys bounds the keys one Write's DeleteRanges delete,
	// atomically; past it Write fails with ErrRangeTooLarge and deletes
	// nothing. 0 = DefaultMaxDeleteRangeKeys.
	MaxDeleteRangeKeys int
	// WriteRetries is how many times a Write with a DeleteRange tries its
	// transaction when it meets a write conflict (a blind Write, of Sets
	// and Deletes only, retries until it lands or its context ends); 0 =
	// DefaultWriteRetries.
	WriteRetries int
	// MaxTxnBytes bounds one Txn's buffered writes, keys and values, in
	// bytes (as kv.Options.MaxTxnBytes does); 0 = DefaultMaxTxnBytes. Past
	// it Txn.Set and Txn.Delete fail with kv.ErrTxnTooLarge: the writes
	// live in client-go's memory buffer until Commit, and TiKV holds a
	// transaction's locks in memory until it commits.
	MaxTxnBytes int64
	// Workers is the number of workers of the client's read pool, where
	// coprocessor requests run; 0 = runtime.GOMAXPROCS(0).
	Workers int
	// MaxTasks is how many coprocessor requests may be queued or running
	// in the client's pool before one fails with kv.ErrBusy; 0 = Workers
	// × 2000.
	MaxTasks int
	// TimeSlice is the wall time a coprocessor step may run before it
	// yields; 0 = 1 ms.
	TimeSlice time.Duration
	// CoprocessorConcurrency is how many regions of a coprocessor range
	// are read ahead at once, each into a buffer of at most one scan
	// batch (256 rows), consumed in key order: memory is bounded by
	// CoprocessorConcurrency batches per range being read. 1 reads region
	// after region through one scanner; 0 = DefaultCoprocessorConcurrency.
	CoprocessorConcurrency int
}

func (o *Options) ensureDefaults() {
	if o.Prefix == nil {
		o.Prefix = []byte(DefaultPrefix)
	}
	o.Prefix = bytes.Clone(o.Prefix) // the caller may reuse its slice
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.GCLifetime == 0 {
		o.GCLifetime = DefaultGCLifetime
	}
	if o.GCInterval == 0 {
		o.GCInterval = DefaultGCInterval
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.MaxDeleteRangeKeys == 0 {
		o.MaxDeleteRangeKeys = DefaultMaxDeleteRangeKeys
	}
	if o.WriteRetries == 0 {
		o.WriteRetries = DefaultWriteRetries
	}
	if o.CoprocessorConcurrency == 0 {
		o.CoprocessorConcurrency = DefaultCoprocessorConcurrency
	}
	if o.MaxTxnBytes == 0 {
		o.MaxTxnBytes = DefaultMaxTxnBytes
	}
}

// validate reports every problem at once, each naming its field.
func (o *Options) validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	switch {
	case o.Prefix != nil && len(o.Prefix) == 0:
		bad("Prefix is empty (nil means %q)", DefaultPrefix)
	case o.Prefix != nil && kv.PrefixEnd(o.Prefix) == nil:
		bad("Prefix %q is all 0xff: no key bounds it from above", o.Prefix)
	}
	for _, f := range []struct {
		name  string
		value any
		neg   bool
	}{
		{"GCInterval", o.GCInterval, o.GCInterval < 0},
		{"MaxDeleteRangeKeys", o.MaxDeleteRangeKeys, o.MaxDeleteRangeKeys < 0},
		{"WriteRetries", o.WriteRetries, o.WriteRetries < 0},
		{"Workers", o.Workers, o.Workers < 0},
		{"MaxTasks", o.MaxTasks, o.MaxTasks < 0},
		{"TimeSlice", o.TimeSlice, o.TimeSlice < 0},
		{"CoprocessorConcurrency", o.CoprocessorConcurrency, o.CoprocessorConcurrency < 0},
		{"MaxTxnBytes", o.MaxTxnBytes, o.MaxTxnBytes < 0},
	} {
		if f.neg {
			bad("%s %v is negative", f.name, f.value)
		}
	}
	return errors.Join(errs...)
}

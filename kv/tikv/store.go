package tikv

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/tikv/client-go/v2/oracle"
	"github.com/tikv/client-go/v2/tikv"
	pd "github.com/tikv/pd/client"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// Store is a kv.Store on a TiKV cluster. It is safe for concurrent use.
type Store struct {
	kvs  *tikv.KVStore
	opts Options
	ks   keyspace
	gate gate

	client *stamper // the client-go store's client, wrapped

	pool   *readpool.Pool    // the client's read pool: coprocessor requests
	groups *resource.Manager // the pool's groups, mirroring PD's
	rg     *ResourceGroups

	held      held   // timestamps read at by open snapshots and scans
	serviceID string // this store's service safe point at PD
	gcStop    chan struct{}
	gcDone    chan struct{}
	sweep     *sweeper // nil with a negative SweepInterval
	log       *logSink

	mu    sync.Mutex
	snaps map[*kv.Snapshot]struct{}

	closing   atomic.Bool
	closeDone chan struct{}
	// closingCtx is done when Close begins: the calls inside give up
	// client-go's retries (clientCtx, killer) instead of holding Close.
	closingCtx context.Context
	closeAll   context.CancelFunc
	closeErr   error
}

var _ kv.Store = (*Store)(nil)

// Open connects to the TiKV cluster whose PD servers are pdAddrs and
// returns a Store on it. It fails by ctx's deadline when PD cannot be
// reached (client-go's own constructor, txnkv.NewClient, takes no context
// and may block far longer). ctx bounds only the connecting.
func Open(ctx context.Context, pdAddrs []string, opts *Options) (*Store, error) {
	o, err := checkOptions(opts)
	if err != nil {
		return nil, err
	}
	if len(pdAddrs) == 0 {
		return nil, fmt.Errorf("%w: no PD address", ErrInvalidOptions)
	}
	sink := installLogger(o)
	kvs, err := dial(ctx, pdAddrs)
	sink.remove()
	if err != nil {
		return nil, fmt.Errorf("tikv: open %v: %w", pdAddrs, err)
	}
	return New(kvs, opts)
}

// dial builds a client-go store on PD at pdAddrs, as txnkv.NewClient does
// but bounded by ctx.
func dial(ctx context.Context, pdAddrs []string) (*tikv.KVStore, error) {
	pdCli, err := pd.NewClientWithContext(ctx, pdAddrs, pd.SecurityOption{})
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		pdCli.Close()
		return nil, err
	}
	codecCli := tikv.NewCodecPDClient(tikv.ModeTxn, pdCli)
	spkv, err := tikv.NewEtcdSafePointKV(pdAddrs, nil)
	if err != nil {
		codecCli.Close()
		return nil, err
	}
	rpc := tikv.NewRPCClient(tikv.WithCodec(codecCli.GetCodec()))
	kvs, err := tikv.NewKVStore(fmt.Sprintf("tikv-%v", codecCli.GetClusterID(ctx)), codecCli, spkv, rpc)
	if err != nil {
		_ = rpc.Close()
		_ = spkv.Close()
		codecCli.Close()
		return nil, err
	}
	return kvs, nil
}

// New returns a Store over a client-go store the caller built — e.g. on
// client-go's in-process mock cluster (testutils.NewMockTiKV). The Store
// takes ownership of kvs: its Close closes kvs, and so does New when it
// fails.
func New(kvs *tikv.KVStore, opts *Options) (*Store, error) {
	o, err := checkOptions(opts)
	if err != nil {
		_ = kvs.Close()
		return nil, err
	}
	s := &Store{
		kvs:       kvs,
		opts:      o,
		ks:        keyspace{prefix: o.Prefix, end: kv.PrefixEnd(o.Prefix)},
		groups:    resource.NewManager(),
		serviceID: "coopkv-" + uuid.NewString(),
		snaps:     map[*kv.Snapshot]struct{}{},
		closeDone: make(chan struct{}),
	}
	s.closingCtx, s.closeAll = context.WithCancel(context.Background())
	s.client = &stamper{Client: kvs.GetTiKVClient()}
	kvs.SetTiKVClient(s.client)
	sched := resource.NewScheduler(s.groups)
	s.pool, err = readpool.New(readpool.Options{
		Workers: o.Workers, MaxTasks: o.MaxTasks, TimeSlice: o.TimeSlice,
		Queue: sched, Accountant: sched,
	})
	if err != nil {
		_ = kvs.Close()
		return nil, fmt.Errorf("tikv: read pool: %w", err)
	}
	s.rg = &ResourceGroups{pd: kvs.GetPDClient(), local: s.groups}
	s.log = installLogger(o)
	if o.GCLifetime > 0 {
		s.gcStop, s.gcDone = make(chan struct{}), make(chan struct{})
		go s.gcLoop()
	}
	if o.SweepInterval > 0 {
		s.sweep = newSweeper(s)
	}
	return s, nil
}

func checkOptions(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return o, err
	}
	o.ensureDefaults()
	return o, nil
}

// KVStore returns the client-go store the Store runs on, for what this
// package does not cover. Closing it is the Store's job.
func (s *Store) KVStore() *tikv.KVStore { return s.kvs }

// Prefix returns the prefix every key of the store is stored under.
func (s *Store) Prefix() []byte { return append([]byte(nil), s.ks.prefix...) }

// enter admits a call while the store is open; the caller must leave.
func (s *Store) enter() error {
	if !s.gate.enter() {
		return kv.ErrClosed
	}
	return nil
}

func (s *Store) leave() { s.gate.leave() }

// now is a fresh timestamp from PD's oracle: a read at it sees every write
// that completed before the call.
func (s *Store) now(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return s.kvs.GetOracle().GetTimestamp(ctx, &oracle.Option{TxnScope: oracle.GlobalTxnScope})
}

// NewBatch returns an empty batch for Write.
func (s *Store) NewBatch() *kv.Batch { return new(kv.Batch) }

// Close ends the store: later calls fail with kv.ErrClosed, open
// snapshots are closed, queued coprocessor requests end with kv.ErrClosed,
// running calls are waited for, the GC loop stops, and the client-go store
// is closed. No goroutine of the store or of client-go outlives it. Close
// is idempotent: a Close that meets another one waits for it, and returns
// what it returned.
func (s *Store) Close() error {
	if s.closing.Swap(true) {
		<-s.closeDone
		return s.closeErr
	}
	defer close(s.closeDone)
	s.closeAll()
	if s.gcStop != nil {
		close(s.gcStop)
		<-s.gcDone
	}
	if s.sweep != nil {
		s.sweep.close() // its calls end with closingCtx
	}
	s.mu.Lock()
	snaps := s.snaps
	s.snaps = nil
	s.mu.Unlock()
	for snap := range snaps {
		_ = snap.Close()
	}
	// The pool first: a running coprocessor step ends at its next batch,
	// which the gate refuses; then the calls inside are waited for.
	_ = s.pool.Close()
	s.gate.close()
	s.dropServiceSafePoint()
	s.closeErr = s.kvs.Close()
	s.log.remove()
	return s.closeErr
}

// Get reads key at a fresh timestamp: it sees every write that completed
// before the call. The caller owns the result; a missing key is
// kv.ErrNotFound.
func (s *Store) Get(ctx context.Context, key []byte) ([]byte, error) {
	return reader{s: s}.Get(ctx, key)
}

// MultiGet reads keys from one timestamp with one BatchGet (one request
// per region): values[i] belongs to keys[i], nil when missing, a non-nil
// (possibly empty) slice when present.
func (s *Store) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	return reader{s: s}.MultiGet(ctx, keys)
}

// ExpiresAt says when key expires, as kv.DB.ExpiresAt does, judged at a
// fresh timestamp: the zero Time when it has no TTL, kv.ErrNotFound when
// it is missing or has expired.
func (s *Store) ExpiresAt(ctx context.Context, key []byte) (time.Time, error) {
	return reader{s: s}.ExpiresAt(ctx, key)
}

// Scan reads the keys in [start, end) — nil start is the first key of the
// store, nil end past its last — at one timestamp, taken at the first
// Next, across regions, ascending or (opts.Reverse) descending. Every scan
// has finite bounds on TiKV: the store's prefix bounds the open ends. A
// scan holds its timestamp against GC until it ends or is closed: close
// what you do not read to the end.
func (s *Store) Scan(ctx context.Context, start, end []byte, opts *kv.ScanOptions) *kv.Iterator {
	return reader{s: s}.Scan(ctx, start, end, opts)
}

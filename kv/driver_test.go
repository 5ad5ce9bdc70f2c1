package kv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/kvtest"
	"github.com/coopkv/coopkv/scan"
)

// plainStore is a kv.Store that is not a *DB: raw Pebble, no pool, no row
// cache, built from the driver surface alone (kv.NewIterator,
// kv.NewSnapshotFrom, Batch.Ops) as another backend would be. That it
// passes the conformance suite shows the surface is enough.
type plainStore struct {
	// commitMu orders writes against transactions' commits; writes counts
	// them (driver_txn_test.go).
	commitMu sync.Mutex
	writes   uint64
	mu       sync.RWMutex
	db       *pebble.DB // nil once closed
	snaps    map[*kv.Snapshot]struct{}
	reader   // over db
}

var _ kv.Store = (*plainStore)(nil)

func openPlain(t *testing.T) kv.Store {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	require.NoError(t, err)
	s := &plainStore{db: db, snaps: map[*kv.Snapshot]struct{}{}}
	s.reader = reader{r: db, closed: s.isClosed}
	return s
}

func (s *plainStore) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.db == nil
}

func (s *plainStore) NewBatch() *kv.Batch { return new(kv.Batch) }

func (s *plainStore) Write(ctx context.Context, b *kv.Batch) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return kv.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ops, err := b.Ops()
	if err != nil {
		return err
	}
	pb := s.db.NewBatch()
	defer pb.Close()
	for _, op := range ops {
		switch op.Kind {
		case kv.OpSet:
			err = pb.Set(op.Key, op.Value, nil)
		case kv.OpDelete:
			err = pb.Delete(op.Key, nil)
		case kv.OpDeleteRange:
			end := op.Value
			if end == nil { // open: past the last key (no writer races a test)
				end, err = s.pastLast()
			}
			if err == nil && end != nil {
				err = pb.DeleteRange(op.Key, end, nil)
			}
		}
		if err != nil {
			return err
		}
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	s.writes++
	return pb.Commit(pebble.Sync)
}

func (s *plainStore) pastLast() ([]byte, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if !it.Last() {
		return nil, it.Error()
	}
	return append(bytes.Clone(it.Key()), 0), nil
}

func (s *plainStore) NewSnapshot(ctx context.Context) (*kv.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil, kv.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ps := s.db.NewSnapshot()
	b := &plainSnapshot{reader: reader{r: ps, closed: s.isClosed}, ps: ps}
	snap := kv.NewSnapshotFrom(b)
	b.forget = func() {
		s.mu.Lock()
		delete(s.snaps, snap)
		s.mu.Unlock()
	}
	s.snaps[snap] = struct{}{}
	return snap, nil
}

func (s *plainStore) Close() error {
	s.mu.Lock()
	snaps := s.snaps
	s.snaps = map[*kv.Snapshot]struct{}{}
	s.mu.Unlock()
	for snap := range snaps {
		if err := snap.Close(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	err := s.db.Close()
	s.db = nil
	return err
}

// plainSnapshot is the backend of the store's snapshots.
type plainSnapshot struct {
	reader
	ps     *pebble.Snapshot
	forget func()
}

func (p *plainSnapshot) Close() error {
	p.forget()
	return p.ps.Close()
}

// reader serves the reads of the store and of its snapshots.
type reader struct {
	r      pebble.Reader
	closed func() bool
}

func (r reader) check(ctx context.Context) error {
	if r.closed() {
		return kv.ErrClosed
	}
	return ctx.Err()
}

func (r reader) Get(ctx context.Context, key []byte) ([]byte, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if len(key) == 0 {
		return nil, kv.ErrEmptyKey
	}
	v, closer, err := r.r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, kv.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte{}, v...), nil
}

func (r reader) MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := r.Get(ctx, k)
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return nil, err
		}
		vals[i] = v
	}
	return vals, r.check(ctx)
}

func (r reader) Scan(ctx context.Context, start, end []byte, opts *kv.ScanOptions) *kv.Iterator {
	var so kv.ScanOptions
	if opts != nil {
		so = *opts
	}
	rows := &plainRows{so: so}
	if err := r.check(ctx); err != nil {
		rows.err = err
	} else if start != nil && end != nil && bytes.Compare(start, end) > 0 {
		rows.err = fmt.Errorf("%w: %q after %q", kv.ErrInvalidRange, start, end)
	} else {
		rows.it, rows.err = r.r.NewIter(&pebble.IterOptions{LowerBound: slices.Clone(start), UpperBound: slices.Clone(end)})
	}
	return kv.NewIterator(rows, opts)
}

func (r reader) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	open := func(spec scan.Spec) (*scan.Cursor, error) { return scan.NewCursor(r.r, spec) }
	t, err := coproc.NewTask(ctx, req, open, func() {})
	if err != nil {
		return nil, err
	}
	t.Run()
	return t.Wait()
}

// plainRows is a Pebble iterator as kv.Rows.
type plainRows struct {
	mu   sync.Mutex // Close may come from another goroutine
	it   *pebble.Iterator
	so   kv.ScanOptions
	seen int
	err  error
}

func (p *plainRows) Next() ([]byte, []byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return nil, nil, p.err
	}
	if p.it == nil || (p.so.Limit > 0 && p.seen == p.so.Limit) {
		return nil, nil, io.EOF
	}
	var ok bool
	switch {
	case p.seen > 0 && p.so.Reverse:
		ok = p.it.Prev()
	case p.seen > 0:
		ok = p.it.Next()
	case p.so.Reverse:
		ok = p.it.Last()
	default:
		ok = p.it.First()
	}
	if !ok {
		if err := p.it.Error(); err != nil {
			return nil, nil, err
		}
		return nil, nil, io.EOF
	}
	p.seen++
	return p.it.Key(), p.it.Value(), nil
}

func (p *plainRows) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.it == nil {
		return nil
	}
	err := p.it.Close()
	p.it = nil
	return err
}

func TestDriver_PlainStorePassesConformance(t *testing.T) {
	kvtest.Run(t, openPlain)
}

// sliceRows serves fixed pairs, counting its Closes.
type sliceRows struct {
	pairs  [][2]string
	err    error // after the pairs; nil = io.EOF
	closes int
}

func (r *sliceRows) Next() ([]byte, []byte, error) {
	if r.closes > 0 || len(r.pairs) == 0 {
		if r.err != nil && r.closes == 0 {
			return nil, nil, r.err
		}
		return nil, nil, io.EOF
	}
	p := r.pairs[0]
	r.pairs = r.pairs[1:]
	return []byte(p[0]), []byte(p[1]), nil
}

func (r *sliceRows) Close() error { r.closes++; return nil }

func (r *sliceRows) Stats() kv.ReadStats { return kv.ReadStats{Rows: 7} }

func TestNewIterator_RowsAsAScan(t *testing.T) {
	rows := &sliceRows{pairs: [][2]string{{"a", "1"}, {"b", "2"}}, err: errors.New("disk on fire")}
	it := kv.NewIterator(rows, nil)
	var got []string
	for k, v := range it.All() {
		got = append(got, string(k)+"="+string(v))
	}
	assert.Equal(t, []string{"a=1", "b=2"}, got)
	assert.EqualError(t, it.Err(), "disk on fire", "the rows' error ends the scan")
	assert.Nil(t, it.Key(), "no pair after the end")
	assert.Equal(t, int64(7), it.Stats().Rows, "the rows' stats")
	require.NoError(t, it.Close())
	assert.Equal(t, 1, rows.closes)

	rows = &sliceRows{pairs: [][2]string{{"a", "1"}, {"b", "2"}}}
	it = kv.NewIterator(rows, &kv.ScanOptions{KeysOnly: true})
	require.True(t, it.Next())
	assert.Equal(t, "a", string(it.Key()))
	assert.Nil(t, it.Value(), "keys only")
	require.NoError(t, it.Close())
	assert.False(t, it.Next(), "no pair after Close")
	assert.NoError(t, it.Err(), "a Close is not an error")
}

// countingSnapshot is a backend snapshot that counts the calls it gets.
type countingSnapshot struct {
	gets, closes int
}

func (c *countingSnapshot) Get(context.Context, []byte) ([]byte, error) {
	c.gets++
	return []byte("v"), nil
}

func (c *countingSnapshot) MultiGet(context.Context, [][]byte) ([][]byte, error) {
	return nil, nil
}

func (c *countingSnapshot) Scan(context.Context, []byte, []byte, *kv.ScanOptions) *kv.Iterator {
	return kv.NewIterator(&sliceRows{}, nil)
}

func (c *countingSnapshot) Coprocessor(context.Context, *coproc.Request) (*coproc.Response, error) {
	return &coproc.Response{}, nil
}

func (c *countingSnapshot) Close() error { c.closes++; return nil }

func TestNewSnapshotFrom_ClosesOnceAndRefusesAfter(t *testing.T) {
	ctx := context.Background()
	b := &countingSnapshot{}
	s := kv.NewSnapshotFrom(b)
	v, err := s.Get(ctx, []byte("k"))
	require.NoError(t, err)
	assert.Equal(t, "v", string(v))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	assert.Equal(t, 1, b.closes, "the backend is closed once")

	_, err = s.Get(ctx, []byte("k"))
	assert.ErrorIs(t, err, kv.ErrClosed)
	_, err = s.MultiGet(ctx, nil)
	assert.ErrorIs(t, err, kv.ErrClosed)
	_, err = s.Coprocessor(ctx, &coproc.Request{})
	assert.ErrorIs(t, err, kv.ErrClosed)
	it := s.Scan(ctx, nil, nil, nil)
	assert.False(t, it.Next())
	assert.ErrorIs(t, it.Err(), kv.ErrClosed)
	assert.NoError(t, it.Close())
	assert.Equal(t, 1, b.gets, "no read reached the closed backend")
}

func TestBatch_Ops(t *testing.T) {
	b := new(kv.Batch)
	b.Set([]byte("a"), []byte("1"))
	b.Delete([]byte("b"))
	b.DeleteRange(nil, []byte("c"))
	b.DeleteRange([]byte("d"), nil)
	ops, err := b.Ops()
	require.NoError(t, err)
	require.Len(t, ops, 4)
	assert.Equal(t, kv.BatchOp{Kind: kv.OpSet, Key: []byte("a"), Value: []byte("1")}, ops[0])
	assert.Equal(t, kv.OpDelete, ops[1].Kind)
	assert.Equal(t, "b", string(ops[1].Key))
	assert.Equal(t, kv.OpDeleteRange, ops[2].Kind)
	assert.Empty(t, ops[2].Key, "an open start is empty")
	assert.Equal(t, "c", string(ops[2].Value))
	assert.Equal(t, "d", string(ops[3].Key))
	assert.Nil(t, ops[3].Value, "an open end is nil")

	b.Set(nil, []byte("x"))
	_, err = b.Ops()
	assert.ErrorIs(t, err, kv.ErrEmptyKey, "a batch that cannot apply shows its error")
}

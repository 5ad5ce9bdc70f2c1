package tikv

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// NewSnapshot returns a view of the store as of now: a TiKV timestamp.
// Its reads never see a later write; GC keeps the versions it reads until
// it is closed (or the store is).
func (s *Store) NewSnapshot(ctx context.Context) (*kv.Snapshot, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	ts, err := s.now(ctx)
	if err != nil {
		return nil, storeErr(err)
	}
	return s.snapshotAt(ts)
}

// snapshotAt returns a snapshot at ts, holding it against GC.
func (s *Store) snapshotAt(ts uint64) (*kv.Snapshot, error) {
	b := &snapshot{}
	b.reader = reader{s: s, ts: ts, open: func() bool { return !b.closed.Load() }}
	b.release = s.held.add(ts)
	snap := kv.NewSnapshotFrom(b)
	b.forget = func() {
		s.mu.Lock()
		delete(s.snaps, snap)
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.snaps == nil { // Close has taken the snapshots already
		b.release()
		return nil, kv.ErrClosed
	}
	s.snaps[snap] = struct{}{}
	return snap, nil
}

// snapshot is the backend of a Store's snapshots: reads at its timestamp.
type snapshot struct {
	reader
	closed  atomic.Bool
	once    sync.Once
	release func()
	forget  func()
}

var _ kv.SnapshotBackend = (*snapshot)(nil)

// Coprocessor implements kv.SnapshotBackend.
func (b *snapshot) Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error) {
	return b.reader.Coprocessor(ctx, req)
}

// Close implements kv.SnapshotBackend: the timestamp is no longer held
// against GC.
func (b *snapshot) Close() error {
	b.once.Do(func() {
		b.closed.Store(true)
		b.forget()
		b.release()
	})
	return nil
}

// held is the multiset of timestamps that open snapshots and running scans
// read at: GC never advances past the oldest.
type held struct {
	mu sync.Mutex
	n  map[uint64]int
}

// add holds ts until the returned function is called (once).
func (h *held) add(ts uint64) (release func()) {
	h.mu.Lock()
	if h.n == nil {
		h.n = map[uint64]int{}
	}
	h.n[ts]++
	h.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.n[ts]--; h.n[ts] == 0 {
				delete(h.n, ts)
			}
		})
	}
}

// oldest returns the oldest timestamp held, if any.
func (h *held) oldest() (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var m uint64
	found := false
	for ts := range h.n {
		if !found || ts < m {
			m, found = ts, true
		}
	}
	return m, found
}

package tikv

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/tikv/client-go/v2/oracle"
	"github.com/tikv/client-go/v2/tikv"
)

// gcLoop advances the GC safe point every GCInterval until Close. Without
// TiDB nothing else does, and old MVCC versions would pile up for ever.
func (s *Store) gcLoop() {
	defer close(s.gcDone)
	t := time.NewTicker(s.opts.GCInterval)
	defer t.Stop()
	for {
		select {
		case <-s.gcStop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.opts.GCInterval)
		go func() { // Close must not wait for a slow PD
			select {
			case <-s.gcStop:
				cancel()
			case <-ctx.Done():
			}
		}()
		sp, err := s.gc(ctx)
		cancel()
		if err != nil {
			s.opts.Logger.Warn("tikv: gc", slog.Any("err", err))
			continue
		}
		s.opts.Logger.Debug("tikv: gc", slog.Uint64("safe_point", sp))
	}
}

// gc advances the safe point to GCLifetime ago, but never past the oldest
// timestamp this store's snapshots and scans read at, nor past another
// service's safe point at PD (another coopkv process's oldest snapshot, a
// backup, a changefeed). It returns the safe point in force.
func (s *Store) gc(ctx context.Context) (uint64, error) {
	now, err := s.now(ctx)
	if err != nil {
		return 0, err
	}
	sp := oracle.ComposeTS(oracle.ExtractPhysical(now)-s.opts.GCLifetime.Milliseconds(), 0)
	if old, ok := s.held.oldest(); ok && old < sp {
		sp = old
	}
	// Register what this store needs kept, and learn what every service
	// needs: PD answers the minimum of the service safe points.
	pd := s.kvs.GetPDClient()
	minSP, err := pd.UpdateServiceGCSafePoint(ctx, s.serviceID, s.serviceTTL(), sp)
	if err != nil {
		return 0, err
	}
	if minSP > 0 && minSP < sp {
		sp = minSP
	}
	sp, err = s.kvs.GC(ctx, sp)
	if err != nil {
		return 0, err
	}
	// Where TiDB's GC worker keeps it, so that every client-go reader —
	// this one at once — refuses a snapshot older than sp with
	// ErrGCTooEarly rather than read what GC may have removed.
	if err := s.kvs.GetSafePointKV().Put(tikv.GcSavedSafePoint, strconv.FormatUint(sp, 10)); err != nil {
		return 0, err
	}
	s.kvs.UpdateSPCache(sp, time.Now())
	return sp, nil
}

// serviceTTL is how long, in seconds, PD keeps this store's service safe
// point without a renewal: a store that dies stops holding GC back.
func (s *Store) serviceTTL() int64 {
	return int64(max(s.opts.GCLifetime, 3*s.opts.GCInterval).Seconds()) + 1
}

// dropServiceSafePoint removes the store's service safe point (a TTL of
// 0), so that a closed store holds nothing back.
func (s *Store) dropServiceSafePoint() {
	if s.gcStop == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.kvs.GetPDClient().UpdateServiceGCSafePoint(ctx, s.serviceID, 0, 0); err != nil {
		s.opts.Logger.Warn("tikv: drop service safe point", slog.Any("err", err))
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tikv/client-go/v2/testutils"
	ctikv "github.com/tikv/client-go/v2/tikv"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/tikv"
	"github.com/coopkv/coopkv/kv/tikv/tikvmock"
)

// runTiKV is a whole run of w: open the store (on PD, bounded by
// --open-timeout, or on the mock), run w there (bench.Run), close it.
// Progress, notes and the store's log go to errOut; the log keeps errors
// only, as kvbench's does: client-go warns of what a load and phases
// that end mid-write are expected to cause (slow timestamps, commits cut
// short by the phase's end).
func runTiKV(ctx context.Context, cfg *config, w bench.Workload, out, errOut io.Writer) (err error) {
	errOut = &cli.SyncWriter{W: errOut}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelError}))
	st, f, err := open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			fmt.Fprintln(errOut, f.Stop())
		}
		if cerr := st.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	return bench.Run(ctx, &cfg.Config, w, &stores{st: st, cfg: cfg}, out, errOut)
}

// open opens the run's store: on the cluster at --pd, failing after
// --open-timeout when no PD answers, or on a mock cluster.
func open(ctx context.Context, cfg *config, log *slog.Logger) (*tikv.Store, *faults, error) {
	if cfg.mock {
		return openMock(cfg, log)
	}
	octx, cancel := context.WithTimeout(ctx, cfg.openTimeout)
	defer cancel()
	st, err := tikv.Open(octx, cfg.pd, cfg.options(log))
	switch {
	case err == nil:
		return st, nil, nil
	case ctx.Err() != nil: // Ctrl-C while connecting
		return nil, nil, fmt.Errorf("%w by %w while connecting to PD", bench.ErrInterrupted, context.Cause(ctx))
	case errors.Is(octx.Err(), context.DeadlineExceeded):
		return nil, nil, fmt.Errorf("no PD answered at --pd %s within --open-timeout %v: %w", strings.Join(cfg.pd, ","), cfg.openTimeout, err)
	default:
		return nil, nil, fmt.Errorf("--pd %s: %w", strings.Join(cfg.pd, ","), err)
	}
}

// openMock opens the store on a fresh in-process mock cluster, split
// into regions at mockSplits: one store, or with --faults three, under
// the faults (started here, stopped by the caller).
func openMock(cfg *config, log *slog.Logger) (*tikv.Store, *faults, error) {
	client, cluster, pdClient, err := testutils.NewMockTiKV("", nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mock cluster: %w", err)
	}
	var regions *tikvmock.Cluster
	var hijack func(ctikv.Client) ctikv.Client
	if cfg.faults {
		regions = mockWithFaults(cluster, mockSplits(cfg.prefix, cfg.Keys))
		hijack = regions.Client // its region changes between the requests
	} else {
		testutils.BootstrapWithMultiRegions(cluster, mockSplits(cfg.prefix, cfg.Keys)...)
	}
	kvs, err := ctikv.NewTestTiKVStore(client, pdClient, hijack, nil, 0)
	if err != nil {
		pdClient.Close()
		return nil, nil, errors.Join(fmt.Errorf("mock cluster: %w", err), client.Close())
	}
	st, err := tikv.New(kvs, cfg.options(log)) // the store owns kvs
	if err != nil || !cfg.faults {
		return st, nil, err
	}
	f := &faults{c: cluster, regions: regions, every: cfg.faultEvery, down: cfg.faultDown, election: cfg.faultElect,
		split: cfg.faultSplit, prefix: cfg.prefix, keys: cfg.Keys}
	f.start(cfg.Seed)
	return st, f, nil
}

// mockSplits are where the mock cluster's regions start: at the soak's
// keys (under "soak/"), at the loaded keys' first, and at a quarter, half
// and three quarters of them, so that the soak's keys have a region of
// their own and scans, MultiGets and coprocessor requests cross regions
// as they do on a cluster.
func mockSplits(prefix string, keys int64) [][]byte {
	splits := [][]byte{[]byte(prefix + "soak/")}
	for _, n := range []int64{0, keys / 4, keys / 2, keys * 3 / 4} {
		splits = append(splits, append([]byte(prefix), bench.Key(n)...))
	}
	slices.SortFunc(splits, bytes.Compare)
	return slices.CompactFunc(splits, bytes.Equal) // few keys: quarters coincide
}

// options are the store's options, with log as its logger.
func (c *config) options(log *slog.Logger) *tikv.Options {
	gcLifetime := time.Duration(-1) // no GC
	if c.gc {
		gcLifetime = 0 // the store's default
	}
	return &tikv.Options{
		GCLifetime: gcLifetime,
		Prefix:     []byte(c.prefix),
		Logger:     log,
		Workers:    c.workers,
		MaxTasks:   c.maxTasks,
		TimeSlice:  c.timeSlice,
	}
}

// stores gives the engine the run's one store (bench.Stores): the load
// and the measured phases all use it, whatever the scheduler named —
// there is one, the cluster's — and it stays open until the run ends
// (runTiKV closes it), rather than reconnecting to PD for each.
type stores struct {
	st  *tikv.Store
	cfg *config
}

// Open returns the run's store.
func (s *stores) Open(string, bool) (kv.Store, error) { return s.st, nil }

// Close leaves the store open for the next phase: runTiKV closes it.
func (s *stores) Close(kv.Store) error { return nil }

// Describe is where the store is.
func (s *stores) Describe() string {
	where := "on TiKV (PD " + strings.Join(s.cfg.pd, ",") + ")"
	if s.cfg.mock {
		where = "on client-go's in-process mock cluster (its figures are the client's and the mock's, not TiKV's)"
	}
	return fmt.Sprintf("under %q %s, the coprocessor in a client pool of %d workers", s.cfg.prefix, where, s.Workers())
}

// Workers is the size of the client's coprocessor pool: TiKV schedules
// the other reads.
func (s *stores) Workers() int {
	if s.cfg.workers == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return s.cfg.workers
}

var _ bench.Stores = (*stores)(nil)

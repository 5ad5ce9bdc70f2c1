package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/cmd/kvbench/bench"
	"github.com/coopkv/coopkv/kv"
)

// runBench is a whole kvbench run of w: serve --admin if asked, make the
// store's directory, and run w there (bench.Run); a temporary directory
// is removed at the end. Progress, notes and the stores' log go to
// errOut.
func runBench(ctx context.Context, cfg *config, w bench.Workload, out, errOut io.Writer) (err error) {
	errOut = &cli.SyncWriter{W: errOut}
	st := &stores{cfg: cfg, log: errOut}
	if cfg.admin != "" {
		// Before the load, so that a busy port fails the run at once.
		if st.admin, err = listenAdmin(cfg.admin, errOut); err != nil {
			return err
		}
		defer func() {
			if cerr := st.admin.close(); err == nil && cerr != nil {
				err = cerr
			}
		}()
		fmt.Fprintf(errOut, "admin endpoint on http://%s (kvctl --addr %[1]s)\n", st.admin.addr())
	}
	if st.dir = cfg.dir; st.dir == "" {
		if st.dir, err = os.MkdirTemp("", "kvbench-"); err != nil {
			return err
		}
		defer func() {
			if rerr := os.RemoveAll(st.dir); err == nil && rerr != nil {
				err = rerr
			}
		}()
	} else if err := os.MkdirAll(st.dir, 0o755); err != nil {
		return err
	}
	return bench.Run(ctx, &cfg.Config, w, st, out, errOut)
}

// stores opens the run's stores (bench.Stores): a *kv.DB in dir, with the
// run's options and the scheduler asked for, shown on the admin endpoint
// while it is open.
type stores struct {
	dir   string
	cfg   *config
	log   io.Writer    // the stores' log: errors only
	admin *adminServer // nil without --admin
}

// options are the options of every store kvbench opens, with read
// scheduler scheduler ("" = the store's default). Writes are synced only
// with --sync. The log keeps errors only: the write stalls of the bulk
// load are expected and would clutter the output.
func (st *stores) options(scheduler string) *kv.Options {
	cfg := st.cfg
	rowCache := cfg.rowCache
	if rowCache == 0 {
		rowCache = -1 // kv's "off"; its 0 is the default size
	}
	return &kv.Options{
		Scheduler:    kv.Scheduler(scheduler),
		Workers:      cfg.workers,
		MaxTasks:     cfg.maxTasks,
		TimeSlice:    cfg.timeSlice,
		RowCacheSize: rowCache,
		NoSync:       !cfg.sync,
		Logger:       slog.New(slog.NewTextHandler(st.log, &slog.HandlerOptions{Level: slog.LevelError})),
	}
}

// Open opens the store with scheduler scheduler, or the load's, which
// is never synced, and shows it on the admin endpoint.
func (st *stores) Open(scheduler string, load bool) (kv.Store, error) {
	opts := st.options(scheduler)
	if load {
		opts.NoSync = true
	}
	db, err := kv.Open(st.dir, opts)
	if err != nil {
		return nil, err
	}
	if st.admin != nil {
		st.admin.show(db)
	}
	return db, nil
}

// Close takes db off the admin endpoint, then closes it.
func (st *stores) Close(db kv.Store) error {
	if st.admin != nil {
		st.admin.show(nil)
	}
	return db.Close()
}

// Describe is where the stores are and their pool's size.
func (st *stores) Describe() string {
	return fmt.Sprintf("in %s, %d workers", st.dir, st.cfg.resolvedWorkers())
}

// Workers is the read pool's size.
func (st *stores) Workers() int { return st.cfg.resolvedWorkers() }

var _ bench.Stores = (*stores)(nil)

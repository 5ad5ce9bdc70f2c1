package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/cmd/internal/slowdisk"
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
// scheduler scheduler ("" = the store's default), or of the load's. Writes
// are synced only with --sync, and never the load's. With --disk-latency
// the store runs on the simulated slow disk, but not the load's: loading
// through it would only be slow, and the load is not measured. The log
// keeps errors only: the write stalls of the bulk load are expected and
// would clutter the output.
func (st *stores) options(scheduler string, load bool) *kv.Options {
	cfg := st.cfg
	rowCache := cfg.rowCache
	if rowCache == 0 {
		rowCache = -1 // kv's "off"; its 0 is the default size
	}
	opts := &kv.Options{
		Scheduler:    kv.Scheduler(scheduler),
		Workers:      cfg.workers,
		MaxTasks:     cfg.maxTasks,
		TimeSlice:    cfg.timeSlice,
		CacheSize:    cfg.cacheSize,
		RowCacheSize: rowCache,
		NoSync:       !cfg.sync || load,
		NoWarm:       cfg.noWarm,
		NoSweep:      cfg.noSweep,
		TrimWAL:      cfg.trimWAL,
		Logger:       slog.New(slog.NewTextHandler(st.log, &slog.HandlerOptions{Level: slog.LevelError})),
	}
	if cfg.diskLatency > 0 && !load {
		// kv then leaves out the disk-health checks it adds to the OS
		// filesystem, which watch writes, not the reads measured here.
		opts.FS = slowdisk.New(vfs.Default, cfg.diskLatency)
	}
	return opts
}

// Open opens the store with scheduler scheduler, or the load's, and
// shows it on the admin endpoint.
func (st *stores) Open(scheduler string, load bool) (kv.Store, error) {
	db, err := kv.Open(st.dir, st.options(scheduler, load))
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

// Describe is where the stores are, their pool's size, and their block
// cache and simulated disk if set.
func (st *stores) Describe() string {
	s := fmt.Sprintf("in %s, %d workers", st.dir, st.cfg.resolvedWorkers())
	if st.cfg.cacheSize > 0 {
		s += fmt.Sprintf(", a block cache of %d bytes", st.cfg.cacheSize)
	}
	if st.cfg.diskLatency > 0 {
		s += fmt.Sprintf(", a simulated disk latency of %v on every table read after the load", st.cfg.diskLatency)
	}
	return s
}

// StoreSetup is the block cache and the simulated disk, for the report.
func (st *stores) StoreSetup() bench.StoreSetup {
	return bench.StoreSetup{DiskLatency: st.cfg.diskLatency, CacheSize: st.cfg.cacheSize}
}

// Workers is the read pool's size.
func (st *stores) Workers() int { return st.cfg.resolvedWorkers() }

var _ bench.Stores = (*stores)(nil)

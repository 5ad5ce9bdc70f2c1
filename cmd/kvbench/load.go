package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/coopkv/coopkv/kv"
)

// loadBatch is how many keys one batch of the load writes.
const loadBatch = 1_000

// loadStream is the random stream of the loaded values, apart from every
// phase's.
const loadStream = 1 << 32

// load writes keys 0 … cfg.keys-1, each with a value of cfg.valueSize
// bytes (random, or a row: see valueMaker), in batches, then flushes the
// memtables, so the timed phases read sstables as a store that has lived a
// while does.
//
// Its writes are never synced, whatever --sync says: the flush at its end
// makes them durable, and a store lost halfway is loaded again.
//
// It returns an interruption if ctx ends first.
func load(ctx context.Context, st *stores, cfg *config, prog *progress) (err error) {
	opts := st.options("")
	opts.NoSync = true
	db, err := st.open(opts)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer func() {
		if cerr := st.close(db); err == nil && cerr != nil {
			err = fmt.Errorf("load: %w", cerr)
		}
	}()

	r := newRand(cfg.seed, loadStream)
	key := make([]byte, 0, keyLen)
	values := newValueMaker(cfg)
	c := prog.count("load", cfg.keys, "keys")
	for n := int64(0); n < cfg.keys; {
		if ctx.Err() != nil {
			c.stopped(n)
			return interruption{phase: "the load"}
		}
		b := db.NewBatch()
		start, end := n, min(n+loadBatch, cfg.keys)
		for ; n < end; n++ {
			value, err := values.next(r)
			if err != nil {
				return fmt.Errorf("load: %w", err)
			}
			// The batch copies key and value, so both buffers are reused.
			b.Set(appendKey(key[:0], n), value)
		}
		if err := db.Apply(b); err != nil {
			return fmt.Errorf("load: %w", err)
		}
		c.add(end - start)
	}
	if err := db.Flush(); err != nil {
		return fmt.Errorf("load: flush: %w", err)
	}
	c.done()
	return nil
}

// stores opens the run's stores, in dir, each with the run's options,
// and shows each on the admin endpoint while it is open.
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

// open opens the store with opts and shows it on the admin endpoint.
func (st *stores) open(opts *kv.Options) (*kv.DB, error) {
	db, err := kv.Open(st.dir, opts)
	if err != nil {
		return nil, err
	}
	if st.admin != nil {
		st.admin.show(db)
	}
	return db, nil
}

// close takes db off the admin endpoint, then closes it.
func (st *stores) close(db *kv.DB) error {
	if st.admin != nil {
		st.admin.show(nil)
	}
	return db.Close()
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

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
func load(ctx context.Context, dir string, cfg *config, prog *progress) (err error) {
	db, err := kv.Open(dir, storeOptions(cfg, ""))
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer func() {
		if cerr := db.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("load: %w", cerr)
		}
	}()

	r := newRand(cfg.seed, loadStream)
	key := make([]byte, 0, keyLen)
	values := newValueMaker(cfg)
	c := prog.count("load", cfg.keys, "keys")
	for n := int64(0); n < cfg.keys; {
		if err := ctx.Err(); err != nil {
			return err
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

// storeOptions are the options of every store kvbench opens. Writes are
// not synced: kvbench measures reads, and a lost store is regenerated.
// Its log keeps errors only: the write stalls of the bulk load are
// expected and would clutter the output.
func storeOptions(cfg *config, scheduler string) *kv.Options {
	return &kv.Options{
		Scheduler: kv.Scheduler(scheduler),
		Workers:   cfg.workers,
		NoSync:    true,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	}
}

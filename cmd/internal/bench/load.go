package bench

import (
	"context"
	"fmt"
)

// loadBatch is how many keys one batch of the load writes.
const loadBatch = 1_000

// loadStream is the random stream of the loaded values, apart from every
// phase's.
const loadStream = 1 << 32

// flusher is a store that can write its memtables out (*kv.DB).
type flusher interface{ Flush() error }

// load writes keys 0 … cfg.Keys-1, each with a value of cfg.ValueSize
// bytes (random, or a row if rows: see valueMaker), in batches, into the
// store stores open for it, then, if the store can, flushes the
// memtables, so the timed phases read sstables as a store that has lived
// a while does.
//
// kvbench's stores never sync the load's writes, whatever --sync says:
// the flush at its end makes them durable, and a store lost halfway is
// loaded again.
//
// It returns an interruption if ctx ends first.
func load(ctx context.Context, stores Stores, cfg *Config, rows bool, prog *progress) (err error) {
	db, err := stores.Open("", true)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	defer func() {
		if cerr := stores.Close(db); err == nil && cerr != nil {
			err = fmt.Errorf("load: %w", cerr)
		}
	}()

	r := newRand(cfg.Seed, loadStream)
	key := make([]byte, 0, keyLen)
	values := newValueMaker(rows, cfg.ValueSize)
	c := prog.count("load", cfg.Keys, "keys")
	for n := int64(0); n < cfg.Keys; {
		if ctx.Err() != nil {
			c.stopped(n)
			return interruption{phase: "the load"}
		}
		b := db.NewBatch()
		start, end := n, min(n+loadBatch, cfg.Keys)
		for ; n < end; n++ {
			value, err := values.next(r)
			if err != nil {
				return fmt.Errorf("load: %w", err)
			}
			// The batch copies key and value, so both buffers are reused.
			b.Set(appendKey(key[:0], n), value)
		}
		if err := db.Write(ctx, b); err != nil {
			if ctx.Err() != nil {
				c.stopped(start)
				return interruption{phase: "the load"}
			}
			return fmt.Errorf("load: %w", err)
		}
		c.add(end - start)
	}
	if f, ok := db.(flusher); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("load: flush: %w", err)
		}
	}
	c.done()
	return nil
}

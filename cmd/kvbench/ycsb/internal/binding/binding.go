// Package binding is what the runner's own go-ycsb bindings (coopkvdb,
// badger4db) share besides their records (package record): the store's
// directory, which may be a temporary one of their own, go-ycsb's
// per-thread calls, which they need not, and the count of their updates'
// transactions run again after a conflict. A binding embeds [Base] and
// registers its Open as a [Creator].
package binding

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/prop"
	"github.com/pingcap/go-ycsb/pkg/ycsb"
)

// Base is embedded in a binding's DB.
type Base struct {
	// dir is the store's directory; temp says it is a temporary one of
	// OpenDir's own, which RemoveDir removes.
	dir  string
	temp bool
	// retries counts the transactions run again.
	retries atomic.Int64
}

// OpenDir makes dir the store's directory, or, when dir is "", to a new temporary
// directory named after pattern (os.MkdirTemp's); otherwise, when p asks
// for go-ycsb's dropdata, it removes what dir holds.
func (b *Base) OpenDir(p *properties.Properties, dir, pattern string) error {
	if dir != "" {
		b.dir = dir
		if p.GetBool(prop.DropData, prop.DropDataDefault) {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("drop data: %w", err)
			}
		}
		return nil
	}
	d, err := os.MkdirTemp("", pattern)
	if err != nil {
		return err
	}
	b.dir, b.temp = d, true
	return nil
}

// Dir is the store's directory.
func (b *Base) Dir() string { return b.dir }

// RemoveDir removes the directory if OpenDir made it, and returns err joined with
// what that met: a binding calls it once its store is closed, or failed to
// open.
func (b *Base) RemoveDir(err error) error {
	if !b.temp {
		return err
	}
	if rerr := os.RemoveAll(b.dir); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// InitThread returns ctx: the binding keeps no per-thread state.
func (b *Base) InitThread(ctx context.Context, _, _ int) context.Context { return ctx }

// CleanupThread does nothing.
func (b *Base) CleanupThread(context.Context) {}

// Retried counts a transaction run again after a conflict.
func (b *Base) Retried() { b.retries.Add(1) }

// TxnRetries is how many times, since the binding opened, an update's
// transaction ran again after a conflict.
func (b *Base) TxnRetries() int64 { return b.retries.Load() }

// Creator is a binding's Open as go-ycsb's DBCreator, which registers it:
// ycsb.RegisterDBCreator(name, binding.Creator[*DB](Open)).
type Creator[D ycsb.DB] func(p *properties.Properties) (D, error)

// Create opens the binding's store; a failed Open is a nil ycsb.DB, not a
// nil D in a non-nil interface.
func (c Creator[D]) Create(p *properties.Properties) (ycsb.DB, error) {
	db, err := c(p)
	if err != nil {
		return nil, err
	}
	return db, nil
}

package kv

import (
	"context"

	"github.com/coopkv/coopkv/coproc"
)

// Store is what an application programs against, so that the same code
// runs on the embedded *DB and on a TiKV cluster (package kv/tikv). Every
// method that may cross a network takes a context. *DB implements it.
//
// Write never fails because another writer wrote the same keys: a batch
// of Sets and Deletes lands whole, the last writer winning. A batch with a
// DeleteRange may fail with an error matching ErrConflict on a backend
// that reads its range first (TiKV), when writers keep changing the range;
// it wrote nothing, and running it again may succeed. The embedded store
// never does.
type Store interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	MultiGet(ctx context.Context, keys [][]byte) ([][]byte, error)
	Scan(ctx context.Context, start, end []byte, opts *ScanOptions) *Iterator
	Coprocessor(ctx context.Context, req *coproc.Request) (*coproc.Response, error)
	NewBatch() *Batch
	Write(ctx context.Context, b *Batch) error
	NewSnapshot(ctx context.Context) (*Snapshot, error)
	// NewTxn begins an optimistic, serializable transaction (see Txn).
	NewTxn(ctx context.Context) (*Txn, error)
	Close() error
}

var _ Store = (*DB)(nil)

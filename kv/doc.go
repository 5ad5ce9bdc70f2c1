// Package kv is coopkv's store: an embedded key-value store on Pebble whose
// reads run as resumable tasks in one bounded read pool. It is the only
// package an embedding program needs.
//
// # Basics
//
// [Open] a store, write with [DB.Set], [DB.Delete] and [DB.Apply] (on the
// caller's goroutine, synced unless [Options.NoSync]), read with [DB.Get]
// and [DB.Scan], and [DB.Close] it. Every method is safe for concurrent use.
//
// # Reads in the pool
//
// A Get is a one-step task; a Scan is a task that yields between batches of
// rows (32 growing to 1024) and streams them to its [Iterator] through a
// buffer of two batches, so a scan's memory is bounded whatever its length.
// The pool's multilevel feedback queue runs the tasks that have used little
// time first, so short reads stay fast beside long scans. When the pool
// holds MaxTasks reads, reads fail at once with [ErrBusy].
//
// # Consistency
//
// A Get never returns a value older than a write that completed before it
// started, nor older than a value a read that completed before it started
// returned (so reads do not go back in time while a write is in flight) —
// the row cache included. A Scan sees the store as of the Scan call,
// across all its yields.
//
// # Transactions
//
// [DB.NewTxn] begins an optimistic, serializable [Txn]: it reads a
// snapshot plus its own writes, buffers its writes, and its Commit fails
// with [ErrConflict], writing nothing, if anyone wrote a key it read (or a
// key inside a range it scanned) since it began. [Update] runs a function
// in a Txn and retries it on conflict.
//
// # One interface, other backends
//
// A program written against [Store] runs on *DB and on any other backend
// (package kv/tikv; a test double). A backend builds kv's own [Iterator],
// [Snapshot] and [Batch] through the driver surface — [NewIterator] over
// its [Rows], [NewSnapshotFrom] over its [SnapshotBackend], [NewTxnFrom]
// over its [TxnBackend] (with [MergeOwnWrites] to merge a transaction's
// writes into its scans), [Batch.Ops] to apply a batch — and proves itself with the conformance suite,
// kvtest.Run.
//
// # Caveats
//
//   - [Iterator.Key] and [Iterator.Value] are valid until the next call of
//     [Iterator.Next]; copy what you keep. The value Get returns is yours.
//   - Close iterators you do not read to the end: an open one holds a Pebble
//     iterator (and with it the files it reads) until Close or DB.Close.
//   - With NoSync a crash may lose the last writes that returned (those not
//     yet synced to the WAL), never older ones, and never part of a batch.
package kv

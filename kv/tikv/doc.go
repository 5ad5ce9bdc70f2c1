// Package tikv is coopkv's kv.Store on a TiKV cluster, through
// github.com/tikv/client-go/v2: a program written against kv.Store runs
// unchanged on the embedded store (kv.Open) and here (Open, or New over a
// client-go store such as its in-process mock cluster). It is a module of
// its own, so that the embedded library never depends on client-go.
//
// # Basics
//
// Open connects to PD and fails by its context's deadline when PD cannot
// be reached. New takes a *tikv.KVStore the caller built and owns it from
// then on. Close is idempotent; every call after it fails with
// kv.ErrClosed, and no goroutine of the store or of client-go outlives it.
//
// Reads are TiKV snapshot reads: Get, MultiGet (one BatchGet, one request
// per region) and Scan read at a fresh timestamp from PD, so they see every
// Write that completed before them; a Scan reads one timestamp from its
// first row to its last, across regions, forward or reverse. NewSnapshot
// pins a timestamp. Write runs one optimistic transaction.
//
// # Transactions
//
// NewTxn (and kv.Update over it) runs a kv.Txn on one of client-go's
// optimistic transactions: it reads at its start timestamp, sees its own
// writes (in client-go's memory buffer, up to Options.MaxTxnBytes), and
// commits them with TiKV's two-phase commit. Every key it read — by Get,
// MultiGet, or returned by a Scan — takes part in the commit's conflict
// check, as TiDB does for SELECT … FOR UPDATE in an optimistic
// transaction: Commit locks those keys, TiKV prewrites them as locks, and
// a commit of any of them after the Txn began fails the prewrite. Commit
// then returns kv.ErrConflict and writes nothing. Write skew is therefore
// impossible, as embedded. Each read and the commit carry their own
// context's resource group, priority and deadline.
//
// # What maps one to one
//
//   - kv.WithResourceGroup and kv.WithPriority travel on every
//     request to TiKV (kvrpcpb.Context: the resource group, the override
//     priority — TiKV's are coopkv's: LOW 1, MEDIUM 8, HIGH 16 — the
//     command priority), with the request source "coopkv"; kv.WithTaskID
//     is the reads' task id. An invalid priority fails the call, as
//     embedded.
//   - resource.GroupConfig is PD's resource group (Store.ResourceGroups):
//     RU/s is the RU fill rate — the same RU: a read request 1/8, 64 KiB
//     read 1, 3 ms of CPU 1 — Burstable an unlimited burst, Priority the
//     group's priority. TiKV's unified read pool (YATP, with the MLFQ and
//     the priority queue of resource groups) does on the servers what
//     coopkv's pool does in process.
//   - Batches are atomic; snapshots are consistent; empty values are
//     values; kv's errors (ErrNotFound, ErrClosed, ErrEmptyKey,
//     ErrInvalidRange, ErrBusy) mean what they mean embedded. kvtest.Run
//     passes.
//
// # What does not map, and what the store does instead
//
//   - The coprocessor: TiKV's own speaks TiDB's DAG format, not coopkv's
//     requests. A coproc.Request runs in a coopkv read pool in this
//     process — pushdown happens in the client, not on the TiKV servers —
//     over region-parallel snapshot scans: each range is split at region
//     boundaries and up to Options.CoprocessorConcurrency regions (default
//     4) are read ahead at once, each by its own scanner at the request's
//     timestamp into a buffer of one batch (256 rows), and consumed in key
//     order, so the rows, limits, pages and errors are those of a
//     sequential read. It yields between batches, is scheduled and
//     charged by its group in that pool, and pages and resumes exactly as
//     embedded. Every row crosses the network. A plain Scan stays
//     sequential, region by region through one scanner: its caller reads
//     row by row, and may stop at any row.
//   - Keys live under a prefix (Options.Prefix, default "coopkv/"), which
//     bounds every scan: client-go's reverse scan with no upper bound read
//     only the first region. Values are stored with one format byte before
//     them: TiKV refuses empty values.
//   - Write retries write conflicts itself, with a new transaction each
//     time: a blind batch reads nothing, so it retries until it lands and
//     the last writer wins, as embedded; one with a DeleteRange, up to
//     Options.WriteRetries, then fails with ErrWriteConflict (matching
//     kv.ErrConflict). Write returns once the transaction's
//     secondary keys are committed too.
//   - DeleteRange runs in the Write's transaction: the range is read at
//     the transaction's start and each key deleted, atomically with the
//     rest of the batch, up to Options.MaxDeleteRangeKeys keys per batch
//     (default 100,000); past it Write fails with ErrRangeTooLarge and
//     writes nothing. Unlike a Pebble range tombstone, a key that another
//     client commits inside the range after the transaction started is not
//     deleted.
//   - Phantoms: a key inserted after a Txn began into a range it scanned
//     is not a conflict on TiKV, which checks the keys a scan returned,
//     not the range; the embedded store checks the range.
//   - A key read is a write to TiKV's conflict check: the lock a Txn
//     commits for it is recorded as a write, so two Txns that read one key
//     and write others conflict (the second to commit fails; kv.Update
//     retries it), where the embedded store commits both.
//   - GC: without TiDB nothing collects old MVCC versions, so the store
//     advances the GC safe point itself (Options.GCLifetime, default 10
//     minutes), never past its oldest open snapshot or scan, nor past any
//     service safe point at PD (it registers its own). A read at a
//     timestamp older than the safe point fails with ErrSnapshotTooOld.
//     An open Txn holds its start timestamp as a snapshot does.
//   - A group's RU/s is a share on TiKV, not a cap: TiKV's read pool orders
//     requests by their group's priority and share, and the hard limit of
//     a group that is not burstable is enforced, in TiDB, by PD's
//     client-side resource-group controller, which this store does not run.
//     The client's coprocessor pool does hold its groups to their RU/s.
//   - No row cache: TiKV has its own block cache; a Get is a network
//     round trip.
//   - Reads other than the coprocessor do not run in a client-side pool:
//     TiKV's read pool schedules them. ErrBusy (a *kv.BusyError) comes only
//     from the client's coprocessor pool, and kv.WithMaxQueueWait bounds the
//     wait there only; TiKV's ServerIsBusy is retried by client-go.
//   - No runaway rules: resource.GroupConfig.Runaway is the embedded
//     store's; on a cluster TiDB's runaway queries are the place for them.
//   - Statistics (kv.DB.Stats), checkpoints and the admin handler are the
//     embedded store's; on TiKV use its own metrics and tools.
//
// # Logging
//
// client-go logs through pingcap/log, process-wide, at INFO by default.
// The store sends its warnings and errors to Options.Logger (slog);
// Options.VerboseClientLogs adds its INFO records.
package tikv

// Package diskfs is the filesystem a coopkv store runs Pebble on: it sees
// every write before Pebble does and decides, by the file's kind and the
// operation, what a failed write, sync or a full disk does to the store.
// Only package kv uses it; kv exports its errors as [ErrFailed] and
// [ErrFull] (kv.ErrFailed, kv.ErrDiskFull).
//
// # Why
//
// Pebble cannot recover from a failed write of its WAL or MANIFEST: it
// reports one through Logger.Fatalf and expects the call not to return, and
// a WAL write that fails while a commit is being prepared panics with the
// commit pipeline's lock held, after which every commit — and Pebble's
// Close — waits forever. An embedded library may do neither. So every store
// runs Pebble on an [FS]:
//
//   - A failed write or sync of the WAL, or of the MANIFEST, fails the
//     store ([Health.Fail]) before Pebble hears of it. From then on the
//     store's writes fail with ErrFailed, and the disk is frozen: nothing
//     more reaches the WAL (its writes and syncs are dropped and reported
//     done, so that Pebble's pipeline never breaks), and no file is created,
//     renamed, linked or removed (Pebble's background work fails instead,
//     so it cannot delete a WAL whose contents a torn MANIFEST no longer
//     accounts for). The directory then holds what it held at the failure:
//     every write acknowledged before it, and none after.
//   - A write that meets ENOSPC marks the disk full (new writes fail with
//     ErrFull at once) and, on the WAL or MANIFEST, waits for space and
//     tries again, so that no committed batch is lost or torn; on a table
//     it is returned to Pebble after a pause, and Pebble retries the flush
//     or compaction (without the pause it would retry at once, in a loop).
//     The first write that succeeds again clears the mark; so does a
//     second without a new ENOSPC (fullHold), since a refused write
//     cannot succeed and Pebble may not retry a failed compaction until
//     a flush asks for one: the next write then finds out.
//
// A failed fsync is never retried: after one, the kernel may already have
// dropped the dirty pages (PostgreSQL's "fsyncgate"), so a retry that
// succeeded would claim what may not be on disk.
//
// # Layout
//
// The rules are one table (policy.go): for each operation, kind of file
// and outcome — the store frozen, success, ENOSPC, another error — an
// action. [Health] (health.go) holds the state the actions change, with
// its clock injected; [FS] and its files (fs.go) run each operation and
// do what the table says.
package diskfs

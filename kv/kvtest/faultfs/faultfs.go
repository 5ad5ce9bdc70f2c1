// Package faultfs holds fault injectors for the embedded store's
// filesystem (kv.Options.FS, Pebble's vfs) — a disk whose fsync fails —
// for tests of what the store, and the tools around it (kv/admin,
// kvctl), do then. It is apart from package kvtest, the backend-neutral
// conformance suite that kv/tikv runs too, which has no filesystem to
// break.
package faultfs

import "github.com/cockroachdb/pebble/v2/vfs/errorfs"

// SyncFaults returns an injector for errorfs.Wrap that, once turned On,
// fails every file sync with errorfs.ErrInjected — a disk whose fsync
// fails: with kv.Options.FS = errorfs.Wrap(fs, SyncFaults()), the next
// synced write fails the store (kv.ErrFailed).
func SyncFaults() *errorfs.Toggle {
	return &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			return errorfs.ErrInjected
		}
		return nil
	})}
}

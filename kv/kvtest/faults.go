package kvtest

import "github.com/cockroachdb/pebble/v2/vfs/errorfs"

// SyncFaults returns an injector for errorfs.Wrap that, once turned On,
// fails every file sync with errorfs.ErrInjected — a disk whose fsync
// fails — for tests of what a store (and the tools around it) do then:
// with kv.Options.FS = errorfs.Wrap(fs, SyncFaults()), the next synced
// write fails the store (kv.ErrFailed).
func SyncFaults() *errorfs.Toggle {
	return &errorfs.Toggle{Injector: errorfs.InjectorFunc(func(op errorfs.Op) error {
		switch op.Kind {
		case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
			return errorfs.ErrInjected
		}
		return nil
	})}
}

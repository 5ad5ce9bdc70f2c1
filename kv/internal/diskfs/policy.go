package diskfs

import (
	"errors"
	"syscall"
)

// The policy: what one operation on one kind of file does to the store,
// for each way it can end. A pure table; Health carries the actions out
// (Health.apply) and FS asks it at every operation.

// kind sorts the files by what a failed write to them does.
type kind uint8

const (
	kindOther    kind = iota // tables, blob files, OPTIONS, markers, a checkpoint's copies: Pebble copes
	kindWAL                  // NNNNNN.log in the store's directory
	kindManifest             // MANIFEST-NNNNNN in the store's directory
	kindDir                  // the store's directory, whose sync makes a new WAL's name durable
	kindOtherDir             // another directory: a checkpoint's
	numKinds
)

// op is an operation of the filesystem or of a file.
type op uint8

const (
	opCreate      op = iota // FS.Create, FS.ReuseForWrite
	opOpenRW                // FS.OpenReadWrite
	opWrite                 // File.Write
	opWriteAt               // File.WriteAt
	opSync                  // File.Sync, SyncData, SyncTo
	opClose                 // File.Close
	opPreallocate           // File.Preallocate
	opLink                  // FS.Link, of the new name's kind
	opRemove                // FS.Remove, FS.RemoveAll
	opRename                // FS.Rename, of the new name's kind
	numOps
)

// class is how an operation ended, or that it comes after the failure.
type class uint8

const (
	// classFrozen: the store has failed. Asked before the operation runs
	// (a Close: after it failed, since a file is closed either way); an
	// action that replies replyDisk lets it run, and its outcome's class
	// decides.
	classFrozen  class = iota
	classOK            // it succeeded
	classNoSpace       // it met ENOSPC
	classErr           // it met another error
	numClasses
)

// classOf is the class of an operation that returned err.
func classOf(err error) class {
	switch {
	case err == nil:
		return classOK
	case errors.Is(err, syscall.ENOSPC):
		return classNoSpace
	}
	return classErr
}

// effect is a change an action makes to the Health, in this order.
type effect uint8

const (
	effWritten effect = 1 << iota // a write reached the disk: it is not full
	effFull                       // the disk is full, for fullHold
	effWait                       // wait for space; once the store closes, the classErr action instead
	effFail                       // fail the store, for good
	effPause                      // hold the error back FullPause: Pebble retries at once
	effKeep                       // keep the error for the Checkpoint (Health.TakeDirSyncErr)
)

// reply is what the caller of the operation hears.
type reply uint8

const (
	replyDisk   reply = iota // the disk's answer (classFrozen: the operation runs)
	replyDone                // success, whatever the disk said, or without asking it
	replyFrozen              // ErrFailed, the disk is frozen: the operation does not run
	replyVoid                // an in-memory file in place of the new WAL (see FS.void)
	replyRetry               // the operation runs again (after effWait)
)

// action is what the policy says of one operation's end.
type action struct {
	effects effect
	reply   reply
}

// The actions the table uses.
var (
	pass      = action{0, replyDisk}                  // nothing noted; asked frozen, it runs
	wrote     = action{effWritten, replyDisk}         // the disk is not full
	refuse    = action{0, replyFrozen}                // the disk is frozen
	drop      = action{0, replyDone}                  // the WAL's: reported done, so Pebble's pipeline goes on
	void      = action{0, replyVoid}                  // a WAL rotated after the failure
	fail      = action{effFail, replyDisk}            // the store fails; Pebble hears of it
	failDrop  = action{effFail, replyDone}            // the store fails; Pebble does not hear of it
	failVoid  = action{effFail, replyVoid}            // the store fails; Pebble gets a WAL that goes nowhere
	wait      = action{effFull | effWait, replyRetry} // the disk is full; try again once there is space
	full      = action{effFull, replyDisk}            // the disk is full
	fullPause = action{effFull | effPause, replyDisk} // the disk is full; Pebble hears of it later
	paused    = action{effPause, replyDisk}           // Pebble hears of it later
	keep      = action{effKeep, replyDone}            // the Checkpoint returns it
)

// rules is the policy: rules[o][k] is the row of operation o on a file
// of kind k, an action per class — frozen, ok, ENOSPC, another error. A
// row left out is pass throughout: Pebble copes (a table's Close), or the
// pair does not occur (a directory's kind comes from FS.OpenDir, never
// from a name, and a directory is only synced and closed).
var rules = [numOps][numKinds][numClasses]action{
	// A new WAL or MANIFEST waits for space, as their writes do. Pebble
	// panics when it cannot rotate its WAL: one it cannot create, or
	// creates after the failure, is void.
	opCreate: {
		kindWAL:      {void, pass, wait, failVoid},
		kindManifest: {refuse, pass, wait, fail},
		kindOther:    {refuse, pass, fullPause, pass},
	},
	opOpenRW: {
		kindWAL:      {refuse, pass, full, fail},
		kindManifest: {refuse, pass, full, fail},
		kindOther:    {refuse, pass, fullPause, pass},
	},
	// The WAL or MANIFEST waits for space: what it holds so far stays,
	// and the rest follows it once there is room. A table's write is
	// Pebble's to retry, after a pause that keeps it from a busy loop.
	opWrite: {
		kindWAL:      {drop, wrote, wait, failDrop},
		kindManifest: {refuse, wrote, wait, fail},
		kindOther:    {refuse, wrote, fullPause, paused},
	},
	// WriteAt is for files opened with OpenReadWrite, which Pebble does
	// not do to the WAL or MANIFEST: nothing waits or drops here.
	opWriteAt: {
		kindWAL:      {refuse, wrote, failDrop, failDrop},
		kindManifest: {refuse, wrote, fail, fail},
		kindOther:    {refuse, wrote, fullPause, paused},
	},
	// A failed sync is never retried (fsyncgate), nor marks the disk
	// full: only a refused write says there is no space. A failed sync
	// of the store's directory may have lost a new WAL's name: as the
	// WAL's. Pebble panics when the sync of a directory its atomic
	// marker moved in fails: a checkpoint's is kept for Checkpoint to
	// return.
	opSync: {
		kindWAL:      {drop, pass, failDrop, failDrop},
		kindManifest: {refuse, pass, fail, fail},
		kindOther:    {refuse, pass, paused, paused},
		kindDir:      {drop, pass, failDrop, failDrop},
		kindOtherDir: {pass, pass, keep, keep},
	},
	// A failed Close may have lost writes: as a failed sync, without the
	// pause.
	opClose: {
		kindWAL:      {drop, pass, failDrop, failDrop},
		kindManifest: {refuse, pass, fail, fail},
		kindDir:      {drop, pass, failDrop, failDrop},
	},
	// An optimisation: on the WAL its failure is left to the writes
	// that follow.
	opPreallocate: {
		kindWAL: {pass, pass, drop, drop},
	},
	opLink: {
		kindWAL:      {refuse, pass, pass, pass},
		kindManifest: {refuse, pass, pass, pass},
		kindOther:    {refuse, pass, pass, pass},
	},
	opRemove: {
		kindWAL:      {refuse, pass, pass, pass},
		kindManifest: {refuse, pass, pass, pass},
		kindOther:    {refuse, pass, pass, pass},
	},
	// A failed rename to a MANIFEST's name is a failed MANIFEST write.
	opRename: {
		kindWAL:      {refuse, pass, pass, pass},
		kindManifest: {refuse, pass, fail, fail},
		kindOther:    {refuse, pass, pass, pass},
	},
}

// policy is the action for operation o on a file of kind k that ended in
// class c.
func policy(k kind, o op, c class) action { return rules[o][k][c] }

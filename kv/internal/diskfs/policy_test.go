package diskfs

import (
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	kindNames = [numKinds]string{kindOther: "other", kindWAL: "wal", kindManifest: "manifest", kindDir: "dir", kindOtherDir: "otherdir"}
	opNames   = [numOps]string{opCreate: "create", opOpenRW: "openrw", opWrite: "write", opWriteAt: "writeat", opSync: "sync",
		opClose: "close", opPreallocate: "preallocate", opLink: "link", opRemove: "remove", opRename: "rename"}
	classNames = [numClasses]string{classFrozen: "frozen", classOK: "ok", classNoSpace: "ENOSPC", classErr: "error"}
)

// actionName names a for failure messages.
func actionName(a action) string {
	for name, b := range map[string]action{"pass": pass, "wrote": wrote, "refuse": refuse, "drop": drop, "void": void,
		"fail": fail, "failDrop": failDrop, "failVoid": failVoid, "wait": wait, "full": full, "fullPause": fullPause,
		"paused": paused, "keep": keep} {
		if a == b {
			return name
		}
	}
	return fmt.Sprintf("%+v", a)
}

// TestPolicy_Table is the policy's spec, every operation × kind × class:
// the package comment's rules, row by row. A row changed in policy.go must
// be changed here too.
func TestPolicy_Table(t *testing.T) {
	type row = [numClasses]action // frozen, ok, ENOSPC, error
	var (
		allPass = row{pass, pass, pass, pass}
		named   = row{refuse, pass, pass, pass} // a change of a name after the failure
	)
	spec := []struct {
		o    op
		k    kind
		want row
	}{
		{opCreate, kindWAL, row{void, pass, wait, failVoid}},
		{opCreate, kindManifest, row{refuse, pass, wait, fail}},
		{opCreate, kindOther, row{refuse, pass, fullPause, pass}},
		{opCreate, kindDir, allPass},
		{opCreate, kindOtherDir, allPass},

		{opOpenRW, kindWAL, row{refuse, pass, full, fail}},
		{opOpenRW, kindManifest, row{refuse, pass, full, fail}},
		{opOpenRW, kindOther, row{refuse, pass, fullPause, pass}},
		{opOpenRW, kindDir, allPass},
		{opOpenRW, kindOtherDir, allPass},

		{opWrite, kindWAL, row{drop, wrote, wait, failDrop}},
		{opWrite, kindManifest, row{refuse, wrote, wait, fail}},
		{opWrite, kindOther, row{refuse, wrote, fullPause, paused}},
		{opWrite, kindDir, allPass},
		{opWrite, kindOtherDir, allPass},

		{opWriteAt, kindWAL, row{refuse, wrote, failDrop, failDrop}},
		{opWriteAt, kindManifest, row{refuse, wrote, fail, fail}},
		{opWriteAt, kindOther, row{refuse, wrote, fullPause, paused}},
		{opWriteAt, kindDir, allPass},
		{opWriteAt, kindOtherDir, allPass},

		{opSync, kindWAL, row{drop, pass, failDrop, failDrop}},
		{opSync, kindManifest, row{refuse, pass, fail, fail}},
		{opSync, kindOther, row{refuse, pass, paused, paused}},
		{opSync, kindDir, row{drop, pass, failDrop, failDrop}},
		{opSync, kindOtherDir, row{pass, pass, keep, keep}},

		{opClose, kindWAL, row{drop, pass, failDrop, failDrop}},
		{opClose, kindManifest, row{refuse, pass, fail, fail}},
		{opClose, kindOther, allPass},
		{opClose, kindDir, row{drop, pass, failDrop, failDrop}},
		{opClose, kindOtherDir, allPass},

		{opPreallocate, kindWAL, row{pass, pass, drop, drop}},
		{opPreallocate, kindManifest, allPass},
		{opPreallocate, kindOther, allPass},
		{opPreallocate, kindDir, allPass},
		{opPreallocate, kindOtherDir, allPass},

		{opLink, kindWAL, named},
		{opLink, kindManifest, named},
		{opLink, kindOther, named},
		{opLink, kindDir, allPass},
		{opLink, kindOtherDir, allPass},

		{opRemove, kindWAL, named},
		{opRemove, kindManifest, named},
		{opRemove, kindOther, named},
		{opRemove, kindDir, allPass},
		{opRemove, kindOtherDir, allPass},

		{opRename, kindWAL, named},
		{opRename, kindManifest, row{refuse, pass, fail, fail}},
		{opRename, kindOther, named},
		{opRename, kindDir, allPass},
		{opRename, kindOtherDir, allPass},
	}
	var seen [numOps][numKinds]bool
	for _, r := range spec {
		require.False(t, seen[r.o][r.k], "%s %s twice in the spec", opNames[r.o], kindNames[r.k])
		seen[r.o][r.k] = true
		for c := range numClasses {
			got := policy(r.k, r.o, c)
			assert.Equal(t, actionName(r.want[c]), actionName(got), "%s of a %s file, %s", opNames[r.o], kindNames[r.k], classNames[c])
		}
	}
	for o := range numOps {
		for k := range numKinds {
			assert.True(t, seen[o][k], "%s of a %s file is in the spec", opNames[o], kindNames[k])
		}
	}
}

// TestPolicy_Invariants checks the reasons behind the rows on every row:
// a row that breaks one is wrong whatever the spec says.
func TestPolicy_Invariants(t *testing.T) {
	var (
		files   = []kind{kindWAL, kindManifest, kindOther}
		logs    = []kind{kindWAL, kindManifest}
		changes = []op{opCreate, opOpenRW, opWrite, opWriteAt, opSync, opLink, opRemove, opRename}
		names   = []op{opCreate, opOpenRW, opLink, opRemove, opRename}
		writes  = []op{opCreate, opOpenRW, opWrite, opWriteAt}
	)
	for o := range numOps {
		for k := range numKinds {
			for c := range numClasses {
				a := policy(k, o, c)
				at := fmt.Sprintf("%s of a %s file, %s: %s", opNames[o], kindNames[k], classNames[c], actionName(a))
				failed := c == classNoSpace || c == classErr
				if c == classFrozen {
					assert.Zero(t, a.effects, "%s: after the failure nothing changes the Health", at)
					if slices.Contains(changes, o) && slices.Contains(files, k) || o == opSync && k == kindDir {
						assert.NotEqual(t, replyDisk, a.reply, "%s: after the failure nothing more reaches the directory", at)
					}
				}
				assert.Equal(t, a.effects&effWait != 0, a.reply == replyRetry, "%s: a wait, and only a wait, tries again", at)
				if a.effects&effWait != 0 {
					assert.Contains(t, []op{opCreate, opWrite}, o, "%s: only a refused write waits for space, never a sync (fsyncgate)", at)
					assert.Contains(t, logs, k, "%s: only the WAL and MANIFEST wait: Pebble retries the rest", at)
					assert.Zero(t, policy(k, o, classErr).effects&effWait, "%s: once the store closes, the error row does not wait again", at)
				}
				if a.reply == replyVoid {
					assert.True(t, o == opCreate && k == kindWAL, "%s: only a new WAL is void", at)
				}
				if slices.Contains(names, o) {
					assert.NotEqual(t, replyDone, a.reply, "%s: an operation on a name has no outcome to pretend", at)
				}
				if a.effects&effFail != 0 {
					assert.Contains(t, []kind{kindWAL, kindManifest, kindDir}, k, "%s: only the WAL, the MANIFEST and the directory that names them fail the store", at)
				}
				if a.effects&effWritten != 0 {
					assert.True(t, c == classOK && (o == opWrite || o == opWriteAt), "%s: only a write that reached the disk says there is space", at)
				}
				if a.effects&effFull != 0 {
					assert.Equal(t, classNoSpace, c, "%s: only ENOSPC says the disk is full", at)
				}
				// The WAL's and MANIFEST's WriteAt fail the store instead
				// (see opWriteAt).
				if c == classNoSpace && slices.Contains(writes, o) && slices.Contains(files, k) && !(o == opWriteAt && k != kindOther) {
					assert.NotZero(t, a.effects&effFull, "%s: a refused write marks the disk full", at)
				}
				if failed && slices.Contains([]op{opWrite, opWriteAt, opSync, opClose}, o) && slices.Contains(logs, k) {
					assert.NotZero(t, a.effects&(effFail|effWait), "%s: a lost WAL or MANIFEST write fails the store or waits", at)
				}
				if failed && slices.Contains([]op{opWrite, opWriteAt, opSync}, o) && k == kindOther {
					assert.True(t, a.effects&effPause != 0 && a.reply == replyDisk, "%s: Pebble retries a table's failure, after a pause", at)
				}
			}
		}
	}
}

// TestClassOf sorts the errors the disk returns.
func TestClassOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want class
	}{
		{nil, classOK},
		{syscall.ENOSPC, classNoSpace},
		{fmt.Errorf("write 000001.log: %w", syscall.ENOSPC), classNoSpace},
		{syscall.EIO, classErr},
		{errors.New("injected"), classErr},
	} {
		assert.Equal(t, classNames[tc.want], classNames[classOf(tc.err)], "%v", tc.err)
	}
}

package kv

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	crerrors "github.com/cockroachdb/errors"
	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv/internal/diskfs"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
	"github.com/coopkv/coopkv/scan"
)

var (
	// ErrNotFound is returned by Get for a key that is not in the store.
	ErrNotFound = errors.New("kv: not found")
	// ErrClosed is returned by every call after Close (a Scan's Err says so).
	ErrClosed = errors.New("kv: closed")
	// ErrBusy is returned, as a *BusyError, when the read pool holds
	// MaxTasks queued and running reads, or when a read's estimated wait
	// exceeds its WithMaxQueueWait. Nothing was done; retry later.
	ErrBusy = errors.New("kv: busy")
	// ErrRunaway ends a read that a runaway rule with the kill action
	// caught (Options.Runaway, resource.GroupConfig.Runaway): at the step
	// after it crossed a limit, or before its first step when a watch
	// knew it. What it had returned stands; it returns no more.
	ErrRunaway = errors.New("kv: runaway read killed")
	// ErrInvalidRange is returned (by a Scan's Err) for a range whose start
	// is after its end, both being non-nil.
	ErrInvalidRange = errors.New("kv: invalid range")
	// ErrEmptyKey is returned by Set, Delete, Get and Apply for a nil or
	// empty key.
	ErrEmptyKey = errors.New("kv: empty key")
	// ErrReadOnly is returned by Set, Delete and Apply on a store opened
	// with Options.ReadOnly.
	ErrReadOnly = errors.New("kv: store is read-only")
	// ErrLocked is returned (wrapped, naming the directory) by Open when
	// another process — or another open DB in this one — holds the store.
	// Pebble allows one opener at a time; Open fails at once rather than
	// wait for it.
	ErrLocked = errors.New("kv: store is open elsewhere")
	// ErrCorrupt is returned (wrapped, naming the file) by a read that met
	// stored data failing its checksum, by Check, and by Open when the
	// store's files are damaged. A read returns it, never a wrong value.
	ErrCorrupt = errors.New("kv: corrupt data")
	// ErrFailed is returned (wrapping the cause) by every write after one
	// met a write error the store cannot recover from: a failed write or
	// sync of the WAL or MANIFEST. Reads go on; Close returns the cause,
	// and a reopen on a healthy disk recovers every acknowledged write.
	// See Options.NoSync for what the reads serve meanwhile.
	ErrFailed = diskfs.ErrFailed
	// ErrDiskFull is returned (wrapping syscall.ENOSPC) by writes while
	// the disk is full: a write met ENOSPC less than a second ago and none
	// has reached the disk since. Nothing was written; retry later (the
	// write after the second finds out whether there is space). Reads go on.
	ErrDiskFull = diskfs.ErrFull
)

// BusyError is how ErrBusy comes back: errors.Is(err, ErrBusy) holds, and
// errors.As gives the estimate (TiKV's early busy reply, RFC 0105).
type BusyError struct {
	// EstimatedWait is the read's estimated wait for its first step, which
	// exceeded its WithMaxQueueWait; 0 when the pool was simply full.
	EstimatedWait time.Duration
}

// Error implements error.
func (e *BusyError) Error() string {
	if e.EstimatedWait == 0 {
		return ErrBusy.Error()
	}
	return fmt.Sprintf("%v: estimated wait %v", ErrBusy, e.EstimatedWait)
}

// Unwrap returns ErrBusy.
func (e *BusyError) Unwrap() error { return ErrBusy }

var (
	// errNegativeLimit is a Scan's Err for a negative ScanOptions.Limit.
	errNegativeLimit = errors.New("kv: negative ScanOptions.Limit")
	// errInvalidPriority fails a read whose context carries a priority
	// that is none of resource's classes (see WithPriority).
	errInvalidPriority = errors.New("kv: invalid priority")
)

// The one mapping from what reads fail with — the pool's, the scan
// package's, Pebble's and the context's errors — to what the store's
// callers see: every error starts with "kv: " and names the operation and
// its key or range; the store's sentinels, context errors and
// *readpool.PanicError stay reachable with errors.Is and errors.As; no
// inner package's prefix ("readpool: ", "scan: ") shows.

// getError is the error of a Get of key that failed with err. ErrNotFound
// stays bare: it is the common answer, and wrapping it would cost the hot
// path an allocation (Pebble answers a missing key bare too).
func getError(key []byte, err error) error {
	if err == nil || err == ErrNotFound {
		return err
	}
	return fmt.Errorf("kv: get %q: %w", key, storeErr(err))
}

// scanError is the error of a Scan of [start, end) that failed with err.
func scanError(start, end []byte, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("kv: scan [%s, %s): %w", bound(start, "-inf"), bound(end, "+inf"), storeErr(err))
}

func bound(b []byte, open string) string {
	if b == nil {
		return open
	}
	return fmt.Sprintf("%q", b)
}

// storeErr replaces an inner package's error by the store's own.
func storeErr(err error) error {
	var pe *readpool.PanicError
	var re *coproc.RangeError
	switch {
	case errors.As(err, &pe):
		return &panicError{pe}
	case errors.Is(err, readpool.ErrBusy):
		var be *readpool.BusyError
		if errors.As(err, &be) {
			return &BusyError{EstimatedWait: be.EstimatedWait}
		}
		return &BusyError{}
	case errors.Is(err, readpool.ErrClosed):
		return ErrClosed
	case errors.As(err, &re):
		// coproc's words name the range: keep them, not its prefix.
		return &invalidRangeError{inner: err, detail: re.Detail()}
	case errors.Is(err, scan.ErrInvalidRange):
		// scanError names the range already.
		return &invalidRangeError{inner: err, detail: "start after end"}
	case errors.Is(err, scan.ErrNegativeLimit):
		return errNegativeLimit
	}
	return corruptOr(err)
}

// corruptOr marks Pebble's corruption errors as ErrCorrupt and returns any
// other as it is. Pebble marks them with cockroachdb/errors, which the
// standard errors.Is does not see through.
func corruptOr(err error) error {
	if err == nil || errors.Is(err, ErrCorrupt) || !crerrors.Is(err, pebble.ErrCorruption) {
		return err
	}
	return &corruptError{err}
}

// isNotExist reports whether err says a file does not exist, also through
// Pebble's cockroachdb/errors wrapping, which the standard errors.Is does
// not always see through.
func isNotExist(err error) bool { return crerrors.Is(err, os.ErrNotExist) }

// corruptError is a read that met data failing its checksum: ErrCorrupt,
// with Pebble's words, which name the file and the block.
type corruptError struct{ err error }

// Error is Pebble's first line: the file, the block, what failed (the
// rest is cockroachdb/errors' detail, for %+v).
func (e *corruptError) Error() string {
	msg, _, _ := strings.Cut(e.err.Error(), "\n")
	return "corrupt data: " + msg
}

func (e *corruptError) Is(target error) bool { return target == ErrCorrupt }
func (e *corruptError) Unwrap() error        { return e.err }

// invalidRangeError is ErrInvalidRange in the words of the package that
// found the range invalid, without that package's prefix: "invalid range:
// Ranges[0] ["b", "a"): start after end", not "kv: invalid range: coproc:
// invalid range: Ranges[0] …". It matches ErrInvalidRange and unwraps to
// the inner package's error.
type invalidRangeError struct {
	inner  error
	detail string // what is wrong, with the range where not said around it
}

func (e *invalidRangeError) Error() string { return "invalid range: " + e.detail }

func (e *invalidRangeError) Is(target error) bool { return target == ErrInvalidRange }
func (e *invalidRangeError) Unwrap() error        { return e.inner }

// panicError is a read whose step panicked. It carries the pool's
// *readpool.PanicError (errors.As finds it, and through it an error the
// step panicked with) but words its message without the pool's prefix.
type panicError struct{ pe *readpool.PanicError }

func (e *panicError) Error() string {
	return fmt.Sprintf("read panicked: %v\n%s", e.pe.Value, e.pe.Stack)
}

func (e *panicError) Unwrap() error { return e.pe }

// priorityError is the error of a read made with an invalid priority.
func priorityError(p resource.Priority) error {
	return fmt.Errorf("%w %d (want resource.PriorityLow, PriorityMedium or PriorityHigh: %d, %d or %d)",
		errInvalidPriority, int(p), resource.PriorityLow, resource.PriorityMedium, resource.PriorityHigh)
}

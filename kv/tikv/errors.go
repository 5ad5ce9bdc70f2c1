package tikv

import (
	"context"
	"errors"
	"fmt"

	tikverr "github.com/tikv/client-go/v2/error"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/readpool"
)

var (
	// ErrInvalidOptions is returned (wrapped, naming the field) by New and
	// Open for options that cannot be used.
	ErrInvalidOptions = errors.New("tikv: invalid options")
	// ErrSnapshotTooOld is returned (wrapping client-go's ErrGCTooEarly)
	// by a read at a timestamp older than the cluster's GC safe point:
	// the versions it would read may be gone. This store never advances
	// the safe point past its own open snapshots and scans; another
	// client's GC may.
	ErrSnapshotTooOld = errors.New("tikv: snapshot is older than the GC safe point")
	// ErrRangeTooLarge is returned by Write when its DeleteRanges would
	// delete more than Options.MaxDeleteRangeKeys keys. Nothing was
	// written: split the range, or raise the bound.
	ErrRangeTooLarge = errors.New("tikv: delete range too large")
	// ErrWriteConflict is returned (wrapping client-go's error) by Write
	// when its transaction met a write conflict Options.WriteRetries
	// times in a row. Nothing was written.
	ErrWriteConflict = errors.New("tikv: write conflict")
	// ErrInvalidValue is returned by a read that met a stored value this
	// package did not write (see the package documentation's format).
	ErrInvalidValue = errors.New("tikv: stored value not in coopkv's format")
)

var (
	errNegativeLimit   = errors.New("negative ScanOptions.Limit")
	errInvalidPriority = errors.New("invalid priority")
)

// storeErr is the one mapping from what client-go, the read pool and the
// coprocessor fail with to what the store's callers see: kv's sentinels,
// context errors and this package's stay reachable with errors.Is.
func storeErr(err error) error {
	var gc *tikverr.ErrGCTooEarly
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.As(err, &gc):
		return fmt.Errorf("%w (%v)", ErrSnapshotTooOld, err)
	case retryable(err):
		// A transaction's commit met a newer write (or a lock that one
		// left) of a key it read or wrote; client-go rolled it back.
		return fmt.Errorf("%w (%w)", kv.ErrConflict, err)
	case errors.Is(err, readpool.ErrBusy):
		// As the embedded store answers it: a *kv.BusyError, with the
		// client pool's estimate when a WithMaxQueueWait refused it.
		var be *readpool.BusyError
		if errors.As(err, &be) {
			return &kv.BusyError{EstimatedWait: be.EstimatedWait}
		}
		return &kv.BusyError{}
	case errors.Is(err, readpool.ErrClosed):
		return kv.ErrClosed
	case errors.Is(err, coproc.ErrInvalidRange):
		return &invalidRangeError{err}
	}
	return err
}

// invalidRangeError is a coprocessor range error that is also
// kv.ErrInvalidRange, as the embedded store answers it.
type invalidRangeError struct{ err error }

func (e *invalidRangeError) Error() string        { return e.err.Error() }
func (e *invalidRangeError) Unwrap() error        { return e.err }
func (e *invalidRangeError) Is(target error) bool { return target == kv.ErrInvalidRange }

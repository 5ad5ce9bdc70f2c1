package tikv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	tikverr "github.com/tikv/client-go/v2/error"
	"github.com/tikv/client-go/v2/tikv"

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
	// ErrWriteConflict is returned (wrapping client-go's error) by a
	// Write with a DeleteRange when its transaction met a write conflict
	// Options.WriteRetries times in a row. Nothing was written. It matches
	// kv.ErrConflict: running the Write again may succeed. A Write without
	// a DeleteRange never fails for a conflict.
	ErrWriteConflict = fmt.Errorf("tikv: write conflict: %w", kv.ErrConflict)
	// ErrInvalidValue is returned by a read that met a stored value this
	// package did not write (see the package documentation's format).
	ErrInvalidValue = errors.New("tikv: stored value not in coopkv's format")
	// ErrUnavailable is what an *UnavailableError is: the cluster did not
	// serve the call — the stores holding its keys were down, unreachable
	// or without a leader — until client-go gave up retrying, or until the
	// call's context ended first.
	ErrUnavailable = errors.New("tikv: cluster unavailable")
)

// UnavailableError is the error of a call the cluster did not serve. It
// is ErrUnavailable (errors.Is), and unwraps to what ended the call: the
// context's error when its deadline or cancellation came first, else
// client-go's last word (e.g. its "region unavailable"). Its message is
// one line, naming the region of the call's first key and that region's
// leader's store when client-go's region cache knows them; client-go logs
// its backoff history itself.
type UnavailableError struct {
	// Region and Store are the region holding the call's first key (a
	// scan's lower bound) and the store of its leader, as client-go's
	// region cache (or PD) had them; 0 when neither answered.
	Region, Store uint64
	// PD is set when PD, not a store, did not answer in time (client-go's
	// ErrPDServerTimeout): the region's place could not be had.
	PD bool
	// Err is what ended the call.
	Err error
	// detail is client-go's word when Err is the context's error.
	detail error
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	b.WriteString(ErrUnavailable.Error())
	if e.Region != 0 {
		fmt.Fprintf(&b, " at region %d", e.Region)
		if e.Store != 0 {
			fmt.Fprintf(&b, " (leader on store %d)", e.Store)
		}
	}
	if e.PD {
		b.WriteString(": PD did not answer in time")
		if msg := e.Err.Error(); msg != "" {
			fmt.Fprintf(&b, " (%s)", oneLine(e.Err))
		}
		return b.String()
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if e.detail != nil {
		fmt.Fprintf(&b, " (%s)", oneLine(e.detail))
	}
	return b.String()
}

// Is makes an UnavailableError ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap is what ended the call.
func (e *UnavailableError) Unwrap() error { return e.Err }

// oneLine is err's message up to its first line break.
func oneLine(err error) string {
	msg := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

// locateTimeout bounds at's question to PD: an error is not worth more.
const locateTimeout = 100 * time.Millisecond

// unavailable reports whether err is client-go's word that the cluster
// did not serve a request: it gave up on a region (no leader answered, the
// store was down or busy, the region not ready), or, for a call whose
// context ended, was still retrying a region error or was interrupted in
// its backoff (killer).
func unavailable(err error) bool {
	var interrupted tikverr.ErrQueryInterruptedWithSignal
	return errors.Is(err, tikverr.ErrRegionUnavailable) || errors.Is(err, tikverr.ErrTiKVServerTimeout) ||
		errors.Is(err, tikverr.ErrTiKVServerBusy) || errors.Is(err, tikverr.ErrRegionDataNotReady) ||
		errors.Is(err, tikverr.ErrRegionNotInitialized) || errors.Is(err, tikverr.ErrQueryInterrupted) ||
		errors.As(err, &interrupted) || regionError(err)
}

// regionError reports whether err is a TiKV region error that client-go
// returned as its text alone — a request whose context ended while it
// retried one returns errors.New of the errorpb.Error's text, such as
// "epoch_not_match:<> " — by the names of errorpb.Error's fields.
func regionError(err error) bool {
	msg := err.Error()
	for _, name := range regionErrors {
		if strings.HasPrefix(msg, name+":") || strings.Contains(msg, " "+name+":") {
			return true
		}
	}
	return false
}

// regionErrors are errorpb.Error's fields that say a region or its store
// could not serve (kvproto's errorpb.proto).
var regionErrors = []string{
	"not_leader", "region_not_found", "key_not_in_region", "epoch_not_match", "server_is_busy",
	"stale_command", "store_not_match", "max_timestamp_not_synced", "read_index_not_ready",
	"proposal_in_merging_mode", "data_is_not_ready", "region_not_initialized", "disk_full",
	"recovery_in_progress", "flashback_in_progress", "flashback_not_prepared", "is_witness",
	"mismatch_peer_id", "undetermined_result",
}

// at names where a call that failed with err was: the region of key (a
// store key) and its leader's store, from client-go's region cache, which
// asks PD once, for at most locateTimeout, when the failure dropped the
// region from the cache. It returns err, filled in when it is an
// *UnavailableError that names no region yet.
func (s *Store) at(err error, key []byte) error {
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Region != 0 {
		return err
	}
	cache := s.kvs.GetRegionCache()
	loc := cache.TryLocateKey(key)
	if loc == nil {
		ctx, cancel := context.WithTimeout(context.Background(), locateTimeout)
		loc, _ = cache.LocateKey(tikv.NewNoopBackoff(ctx), key)
		cancel()
	}
	if loc == nil {
		return err
	}
	ue.Region = loc.Region.GetID()
	if r := cache.GetCachedRegionWithRLock(loc.Region); r != nil {
		ue.Store = r.GetLeaderStoreID()
	}
	return err
}

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
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, kv.ErrClosed):
		return err
	case unavailable(err):
		return &UnavailableError{Err: err}
	case errors.As(err, new(*tikverr.ErrPDServerTimeout)):
		return &UnavailableError{Err: err, PD: true}
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

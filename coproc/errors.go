package coproc

import (
	"errors"
	"fmt"
)

// Codec errors. Every error that [Decode], [DecodeResponse], [DecodeRow]
// return for bad bytes matches [ErrMalformed]; the finer sentinels below
// match it too, so a server can answer "bad request" with one errors.Is and
// a test can still tell the causes apart. The encoders return the same
// sentinels when their output would be refused by the decoders.
var (
	// ErrMalformed is the umbrella for bytes the codec refuses: not
	// msgpack, a type that does not fit the field it lands in, an unknown
	// field in a request, or any of the finer errors below.
	ErrMalformed = errors.New("coproc: malformed message")

	// ErrTooLarge is returned when a message is longer than its cap
	// ([MaxRequestBytes], [MaxResponseBytes], [MaxRowBytes]), before any of
	// it is read.
	ErrTooLarge error = codecError("coproc: message too large")

	// ErrTooDeep is returned when arrays and maps nest deeper than
	// [MaxDepth].
	ErrTooDeep error = codecError("coproc: message nested too deep")

	// ErrTruncated is returned when the bytes end inside a value: a header
	// declares a length (or, for an array or map, a count of elements) that
	// the remaining bytes cannot hold.
	ErrTruncated error = codecError("coproc: truncated message")

	// ErrTrailingBytes is returned when bytes follow the one value a
	// message must hold.
	ErrTrailingBytes error = codecError("coproc: trailing bytes after message")

	// ErrNotMap is returned when a request, response or row is not a
	// msgpack map at the top, or a map key is not a string.
	ErrNotMap error = codecError("coproc: not a msgpack map with string keys")

	// ErrUnsupportedType is returned for msgpack types the codec does not
	// carry: extensions (including msgpack's timestamp) and the reserved
	// code 0xc1.
	ErrUnsupportedType error = codecError("coproc: unsupported msgpack type")

	// ErrDuplicateKey is returned when a map in a request holds the same
	// key twice, which msgpack would otherwise merge into a value neither
	// copy described.
	ErrDuplicateKey error = codecError("coproc: duplicate map key")
)

// codecError is a codec sentinel that also matches [ErrMalformed], so that
// the finer causes need not be wrapped twice (and printed twice).
type codecError string

func (e codecError) Error() string { return string(e) }

// Is reports ErrMalformed as a match: every codec sentinel is a kind of
// malformed message.
func (e codecError) Is(target error) bool { return target == ErrMalformed }

// Request errors: a request that cannot run, or whose answer would pass
// its bounds.
var (
	// ErrInvalidRequest is returned (wrapped, naming the field) for a
	// request that cannot run: an unknown op, a wrong number of args, an
	// unknown aggregate, OrderBy without Limit, and the like.
	ErrInvalidRequest = errors.New("coproc: invalid request")
	// ErrInvalidRange is returned, as a *RangeError, for a range whose
	// start is after its end.
	ErrInvalidRange = errors.New("coproc: invalid range")
	// ErrBadRow fails a request that meets, in its ranges, a stored value
	// that is not a row (a msgpack map); the error names the key.
	ErrBadRow = errors.New("coproc: not a row")
	// ErrTooManyGroups fails an aggregation with more than MaxGroups
	// groups.
	ErrTooManyGroups = errors.New("coproc: too many groups")
	// ErrResponseTooLarge fails a request whose answer would pass
	// MaxResponseRows or MaxResponseBytes.
	ErrResponseTooLarge = errors.New("coproc: response too large")
	// ErrOverflow fails a sum of integers that overflows int64.
	ErrOverflow = errors.New("coproc: integer overflow")
)

// RangeError is a request's range whose start is after its end: it is
// ErrInvalidRange (errors.Is), and Detail says which range, for a caller
// that words the error its own way.
type RangeError struct {
	Index      int // in Request.Ranges
	Start, End []byte
}

// Detail names the range and what is wrong with it.
func (e *RangeError) Detail() string {
	return fmt.Sprintf("Ranges[%d] [%q, %q): start after end", e.Index, e.Start, e.End)
}

func (e *RangeError) Error() string        { return ErrInvalidRange.Error() + ": " + e.Detail() }
func (e *RangeError) Is(target error) bool { return target == ErrInvalidRange }

package coproc

import (
	"bytes"
	"fmt"
	"reflect"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Caps on what the codec reads and writes. msgpack v5 allocates whatever
// length a header declares and recurses without a limit
// (vmihailenco/msgpack #376): the five bytes df ff ff ff ff, decoded into a
// map, end the process with an out-of-memory that no recover catches, and
// a few megabytes of nested arrays overflow the stack. So every decoder
// here first refuses input over its cap, then walks the bytes with a small
// validator that checks each declared length against the bytes that remain
// (an array of n elements needs at least n more bytes, a map of n pairs
// 2n) and the nesting depth against [MaxDepth], and only then lets msgpack
// build values. A refused message costs next to no allocation, and an
// accepted one memory proportional to its length: at worst some 25 times
// it, for a map of tiny distinct keys ([]any costs 16 bytes an element, a
// map entry some 50), which is what the caps below bound.
//
// The encoders refuse what the decoders would refuse (too large, too deep,
// extension types, non-string map keys), so that a value that encodes can
// be decoded again.
const (
	// MaxRequestBytes caps an encoded request: 4 MiB, gRPC's default
	// receive limit. A request describes work (ranges, a filter, an "in"
	// list); 4 MiB holds an "in" list of some 200,000 short keys.
	MaxRequestBytes = 4 << 20

	// MaxResponseBytes caps an encoded response: 64 MiB, room for many
	// rows of MaxRowBytes or a page of a million small rows. A larger
	// result should page (Request.PagingSize); EncodeResponse refuses to
	// produce more, so the server learns it rather than its client.
	MaxResponseBytes = 64 << 20

	// MaxRowBytes caps a stored row: 4 MiB, generous for a row of columns
	// (blobs belong in values of their own). A scan decodes many rows, and
	// a hostile one may cost 25 times its length to build, so the cap
	// bounds what one stored value can make a scan allocate (about 100 MiB,
	// transiently). DecodeRow and the executors' column decoder refuse a
	// longer value, so a scan that meets one fails.
	MaxRowBytes = 4 << 20

	// MaxDepth caps how deep arrays and maps nest in a request or a row,
	// counting the top-level map as 1. A response may nest two deeper (its
	// map and its rows array hold the rows), so that any row fits in one.
	// A filter takes two levels per level of its tree (an Expr's map and its
	// args array), so 64 admits a tree some 30 levels deep, far beyond what
	// a query needs, while msgpack's recursion stays a few kilobytes of
	// stack.
	MaxDepth = 64
)

// Encode encodes a request as a msgpack map. It fails with [ErrTooLarge]
// over [MaxRequestBytes], [ErrTooDeep] past [MaxDepth], and
// [ErrUnsupportedType] for values msgpack would write as extensions (e.g.
// time.Time in an [Expr] Value).
func Encode(r *Request) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("coproc: encode request: nil *Request would encode as nil: %w", ErrNotMap)
	}
	if !requestDepthOK(r) {
		return nil, fmt.Errorf("coproc: encode request: %w: filter nests past %d levels (or contains itself)", ErrTooDeep, MaxDepth)
	}
	b, err := encode(r, MaxRequestBytes, MaxDepth, true)
	if err != nil {
		return nil, fmt.Errorf("coproc: encode request: %w", err)
	}
	return b, nil
}

// Decode decodes a request written by [Encode]. Malformed input is an
// error matching [ErrMalformed], never a panic: the bytes must be one
// msgpack map of at most [MaxRequestBytes], nesting at most [MaxDepth],
// with no trailing bytes.
//
// Decode is strict where a lenient reading would change what a request
// does: an unknown field is an error (a misspelt "filter" ignored would
// return every row), and so is a key repeated in any map
// ([ErrDuplicateKey]). Numbers in [Expr] values come back loosely, as
// [normalize] describes, and empty lists come back nil, as omitempty would
// encode them.
func Decode(b []byte) (*Request, error) {
	if err := check(b, MaxRequestBytes, MaxDepth, true); err != nil {
		return nil, fmt.Errorf("coproc: decode request: %w", err)
	}
	d := msgpack.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields(true)
	r := new(Request)
	if err := d.Decode(r); err != nil {
		return nil, fmt.Errorf("coproc: decode request: %w: %w", ErrMalformed, err)
	}
	r.Columns = nilIfEmpty(r.Columns)
	r.GroupBy = nilIfEmpty(r.GroupBy)
	r.Aggs = nilIfEmpty(r.Aggs)
	r.OrderBy = nilIfEmpty(r.OrderBy)
	canonExpr(r.Filter)
	return r, nil
}

// EncodeResponse encodes a response as a msgpack map. It fails with
// [ErrTooLarge] over [MaxResponseBytes] (page the request instead).
func EncodeResponse(r *Response) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("coproc: encode response: nil *Response would encode as nil: %w", ErrNotMap)
	}
	for _, row := range r.Rows {
		if !rowDepthOK(row, 2, MaxDepth+2) {
			return nil, fmt.Errorf("coproc: encode response: %w: a row nests past %d levels (or contains itself)", ErrTooDeep, MaxDepth)
		}
	}
	b, err := encode(r, MaxResponseBytes, MaxDepth+2, false)
	if err != nil {
		return nil, fmt.Errorf("coproc: encode response: %w", err)
	}
	return b, nil
}

// DecodeResponse decodes a response written by [EncodeResponse], with the
// checks of [Decode] but [MaxResponseBytes] and two more levels of
// nesting. Unlike a request, a response ignores unknown fields, so that an
// older client can read a newer server's answer; a repeated key keeps its
// last value. Row values come back loosely, as [normalize] describes; an
// empty ResumeKey comes back nil.
func DecodeResponse(b []byte) (*Response, error) {
	if err := check(b, MaxResponseBytes, MaxDepth+2, false); err != nil {
		return nil, fmt.Errorf("coproc: decode response: %w", err)
	}
	d := msgpack.NewDecoder(bytes.NewReader(b))
	r := new(Response)
	if err := d.Decode(r); err != nil {
		return nil, fmt.Errorf("coproc: decode response: %w: %w", ErrMalformed, err)
	}
	r.ResumeKey = nilIfEmpty(r.ResumeKey)
	for _, row := range r.Rows {
		normalizeOwned(row)
	}
	return r, nil
}

// EncodeRow encodes a row as a plain msgpack map, keys sorted so that
// equal rows encode to equal bytes. A nil row encodes as an empty map.
// Values may be any of the types [normalize] returns (other numeric widths
// are fine; they decode loosely). It fails with [ErrTooLarge] over
// [MaxRowBytes], [ErrTooDeep] past [MaxDepth], and [ErrUnsupportedType]
// for values msgpack writes as extensions, such as time.Time.
func EncodeRow(row map[string]any) ([]byte, error) {
	if row == nil {
		return []byte{0x80}, nil
	}
	if !rowDepthOK(row, 0, MaxDepth) {
		return nil, fmt.Errorf("coproc: encode row: %w: nests past %d levels (or contains itself)", ErrTooDeep, MaxDepth)
	}
	b, err := encode(row, MaxRowBytes, MaxDepth, false)
	if err != nil {
		return nil, fmt.Errorf("coproc: encode row: %w", err)
	}
	return b, nil
}

// DecodeRow decodes a row written by [EncodeRow]: one msgpack map with
// string keys, at most [MaxRowBytes], nesting at most [MaxDepth], with no
// trailing bytes. Values come back loosely, as [normalize] describes; a key
// repeated keeps its last value. The result never aliases b.
func DecodeRow(b []byte) (map[string]any, error) {
	if len(b) > MaxRowBytes {
		return nil, fmt.Errorf("coproc: decode row: %w: %d bytes, cap %d", ErrTooLarge, len(b), MaxRowBytes)
	}
	// The reader checks as it builds, so a row is walked once; what it
	// allocates before meeting an error is still bounded by the input's
	// length, as every length was checked before its allocation.
	r := reader{b: b, maxDepth: MaxDepth}
	it, err := r.topMap()
	if err != nil {
		return nil, fmt.Errorf("coproc: decode row: %w", err)
	}
	m := make(map[string]any, min(it.n, mapHint))
	if err := r.mapInto(m, it.n, 1); err != nil {
		return nil, fmt.Errorf("coproc: decode row: %w", err)
	}
	if err := r.end(); err != nil {
		return nil, fmt.Errorf("coproc: decode row: %w", err)
	}
	return m, nil
}

// encoder is a pooled msgpack encoder with the codec's settings. The
// package keeps its own pool rather than msgpack's GetEncoder, whose
// encoders carry whatever flags their last user set.
type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// maxPooledBuffer is the largest buffer returned to the pool, so that one
// huge response does not stay pinned in memory.
const maxPooledBuffer = 1 << 20

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = msgpack.NewEncoder(&e.buf)
	// Sorted keys make equal rows encode to equal bytes; compact ints
	// keep stored rows small (they decode loosely, so the width written
	// does not matter). Not compact floats: msgpack writes 2.0 as the int
	// 2, and a float would come back an int64.
	e.enc.SetSortMapKeys(true)
	e.enc.UseCompactInts(true)
	return e
}}

// encode writes v with the pooled encoder and checks the result as the
// decoder will, so that nothing encodes that cannot be decoded.
func encode(v any, maxBytes, maxDepth int, unique bool) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.buf.Reset()
	err := e.enc.Encode(v)
	var b []byte
	if err == nil && e.buf.Len() <= maxBytes {
		b = bytes.Clone(e.buf.Bytes())
	}
	n := e.buf.Len()
	if e.buf.Cap() <= maxPooledBuffer {
		encoders.Put(e)
	}
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("%w: %d bytes, cap %d", ErrTooLarge, n, maxBytes)
	}
	if err := check(b, maxBytes, maxDepth, unique); err != nil {
		return nil, err
	}
	return b, nil
}

// Before encoding, the Go values are walked for depth, because msgpack's
// encoder has no limit either: a row that contains itself would recurse
// until the stack overflows, which no recover survives. d is the number of
// msgpack containers around v; a container at d >= max would be one too
// deep.

func requestDepthOK(r *Request) bool {
	// The request's map encloses the filter.
	return exprDepthOK(r.Filter, 1, MaxDepth)
}

func exprDepthOK(e *Expr, d, max int) bool {
	if e == nil {
		return true
	}
	if d >= max || !depthOK(e.Value, d+1, max) {
		return false
	}
	if len(e.Args) == 0 {
		return true
	}
	if d+1 >= max {
		return false
	}
	for _, a := range e.Args {
		if !exprDepthOK(a, d+2, max) {
			return false
		}
	}
	return true
}

// rowDepthOK checks a row map enclosed by d containers.
func rowDepthOK(row map[string]any, d, max int) bool {
	if row == nil {
		return true
	}
	if d >= max {
		return false
	}
	for _, v := range row {
		if !depthOK(v, d+1, max) {
			return false
		}
	}
	return true
}

func depthOK(v any, d, max int) bool {
	switch x := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		float32, float64, string, []byte:
		return true
	case []any:
		if d >= max {
			return false
		}
		for _, e := range x {
			if !depthOK(e, d+1, max) {
				return false
			}
		}
		return true
	case map[string]any:
		return rowDepthOK(x, d, max)
	}
	return depthOKReflect(reflect.ValueOf(v), d, max)
}

// depthOKReflect is depthOK for other types. It counts a pointer as a
// level too, which msgpack does not, so that a cycle through pointers alone
// still ends; the cost is only that such values hit the cap sooner.
func depthOKReflect(rv reflect.Value, d, max int) bool {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil() || d < max && depthOKReflect(rv.Elem(), d+1, max)
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return true // bin
		}
		if d >= max {
			return false
		}
		for i := range rv.Len() {
			if !depthOKReflect(rv.Index(i), d+1, max) {
				return false
			}
		}
	case reflect.Map:
		if d >= max {
			return false
		}
		for it := rv.MapRange(); it.Next(); {
			if !depthOKReflect(it.Key(), d+1, max) || !depthOKReflect(it.Value(), d+1, max) {
				return false
			}
		}
	case reflect.Struct:
		if d >= max {
			return false
		}
		// msgpack encodes exported fields only; unexported ones may hold
		// anything, cycles included.
		t := rv.Type()
		for i := range rv.NumField() {
			if t.Field(i).IsExported() && !depthOKReflect(rv.Field(i), d+1, max) {
				return false
			}
		}
	}
	return true
}

package coproc

import (
	"bytes"
	"fmt"
	"math"
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

// columnDecoder decodes only the named columns of a stored row (a msgpack
// map), skipping the others without building them. Nothing in it changes
// after newColumnDecoder, so one decoder may serve many goroutines.
type columnDecoder struct {
	cols []string
	// index maps a column to its first position in cols, when cols is
	// long enough that a map beats comparing every name.
	index map[string]int
	// copies lists (to, from) pairs for names repeated in cols: only the
	// first position is decoded, the others copy it.
	copies [][2]int
}

// columnIndexMin is the number of columns from which a columnDecoder looks
// names up in a map rather than comparing them one by one.
const columnIndexMin = 8

// newColumnDecoder returns a decoder of the columns cols, in that order. A
// name may repeat; the key column "_key" is not in a stored row, so the
// caller fills it.
func newColumnDecoder(cols []string) *columnDecoder {
	cd := &columnDecoder{cols: cols}
	first := make(map[string]int, len(cols))
	for i, c := range cols {
		if j, ok := first[c]; ok {
			cd.copies = append(cd.copies, [2]int{i, j})
			continue
		}
		first[c] = i
	}
	if len(first) >= columnIndexMin {
		cd.index = first
	}
	return cd
}

// decode fills dst[i] (len(dst) == len(cols)) with column cols[i]'s value,
// normalized, nil when the row lacks it. It checks the whole row as it
// goes (the cap, every length, the depth, no trailing bytes), so a hostile
// row is an error, and errors on a value that is not a msgpack map. A
// column repeated in the row keeps its last value, as in [DecodeRow]. On
// error dst is all nil. The values never alias row.
func (cd *columnDecoder) decode(row []byte, dst []any) error {
	if len(dst) != len(cd.cols) {
		panic(fmt.Sprintf("coproc: columnDecoder.decode: len(dst) = %d, want %d", len(dst), len(cd.cols)))
	}
	clear(dst)
	if err := cd.decodeInto(row, dst); err != nil {
		clear(dst)
		return fmt.Errorf("coproc: decode row: %w", err)
	}
	for _, c := range cd.copies {
		dst[c[0]] = dst[c[1]]
	}
	return nil
}

func (cd *columnDecoder) decodeInto(row []byte, dst []any) error {
	if len(row) > MaxRowBytes {
		return fmt.Errorf("%w: %d bytes, cap %d", ErrTooLarge, len(row), MaxRowBytes)
	}
	if cd.decodeFlat(row, dst) {
		return nil
	}
	clear(dst)
	r := reader{b: row, maxDepth: MaxDepth}
	it, err := r.topMap()
	if err != nil {
		return err
	}
	for range it.n {
		k, err := r.key()
		if err != nil {
			return err
		}
		i := cd.lookup(k)
		if i < 0 {
			if err := r.skip(1); err != nil {
				return err
			}
			continue
		}
		if dst[i], err = r.value(1); err != nil {
			return err
		}
	}
	return r.end()
}

// decodeFlat is decodeInto's fast path for the common row: a map of fewer
// than 2^16 pairs with short string keys and scalar or string values. It
// checks every length against the bytes left as the general walker does,
// and reports false — leaving the row to the walker, which decodes it or
// names what is wrong — at anything else: a nested value, a long string,
// an extension, bad or trailing bytes.
func (cd *columnDecoder) decodeFlat(b []byte, dst []any) bool {
	if len(b) == 0 {
		return false
	}
	var n, pos int
	switch c := b[0]; {
	case c&0xf0 == 0x80:
		n, pos = int(c&0x0f), 1
	case c == 0xde && len(b) >= 3:
		n, pos = int(b[1])<<8|int(b[2]), 3
	default:
		return false
	}
	for range n {
		// The key: a str of up to 255 bytes.
		if pos >= len(b) {
			return false
		}
		var kl int
		switch c := b[pos]; {
		case c&0xe0 == 0xa0:
			kl, pos = int(c&0x1f), pos+1
		case c == 0xd9 && pos+1 < len(b):
			kl, pos = int(b[pos+1]), pos+2
		default:
			return false
		}
		if kl > len(b)-pos {
			return false
		}
		i := cd.lookup(b[pos : pos+kl])
		pos += kl
		// The value.
		if pos >= len(b) {
			return false
		}
		c := b[pos]
		var v any
		var size int
		switch {
		case c <= 0x7f:
			v, size = int64(c), 1
		case c >= 0xe0:
			v, size = int64(int8(c)), 1
		case c&0xe0 == 0xa0, c == 0xd9, c == 0xc4:
			// str (fix, 8) or bin 8.
			l, h := int(c&0x1f), 1
			if c == 0xd9 || c == 0xc4 {
				if pos+1 >= len(b) {
					return false
				}
				l, h = int(b[pos+1]), 2
			}
			if l > len(b)-pos-h {
				return false
			}
			size = h + l
			if i >= 0 {
				if c == 0xc4 {
					v = bytes.Clone(b[pos+h : pos+size])
				} else {
					v = string(b[pos+h : pos+size])
				}
			}
		case c == 0xc0:
			v, size = nil, 1
		case c == 0xc2 || c == 0xc3:
			v, size = c == 0xc3, 1
		case c >= 0xca && c <= 0xd3:
			// float 32, 64; uint 8-64; int 8-64.
			w := 4
			switch {
			case c == 0xcb:
				w = 8
			case c >= 0xcc && c <= 0xcf:
				w = 1 << (c - 0xcc)
			case c >= 0xd0:
				w = 1 << (c - 0xd0)
			}
			if w > len(b)-pos-1 {
				return false
			}
			size = 1 + w
			if i < 0 {
				break
			}
			var u uint64
			for _, x := range b[pos+1 : pos+size] {
				u = u<<8 | uint64(x)
			}
			switch {
			case c == 0xca:
				v = float64(math.Float32frombits(uint32(u)))
			case c == 0xcb:
				v = math.Float64frombits(u)
			case c <= 0xcf:
				v = normUint(u)
			default:
				shift := 64 - 8*uint(w)
				v = int64(u<<shift) >> shift
			}
		default:
			return false
		}
		if i >= 0 {
			dst[i] = v
		}
		pos += size
	}
	return pos == len(b)
}

// lookup returns the position of column k in cols, or -1. Neither branch
// allocates: the compiler converts string(k) in place for a comparison or
// a map index.
func (cd *columnDecoder) lookup(k []byte) int {
	if cd.index != nil {
		if i, ok := cd.index[string(k)]; ok {
			return i
		}
		return -1
	}
	for i, c := range cd.cols {
		if c == string(k) {
			return i
		}
	}
	return -1
}

// normalize returns v as one of: nil, bool, int64, uint64 (only above
// MaxInt64), float64, string, []byte, []any, map[string]any. Numbers
// convert loosely: every signed and unsigned width becomes int64 (or
// uint64 when it does not fit), float32 becomes float64; named types
// become their underlying kind; other slices and arrays become []any (byte
// slices and arrays []byte), maps with string keys map[string]any, and a
// pointer its target. Nil slices, maps and pointers become nil, as msgpack
// encodes them. Anything else (a struct, time.Time, a channel) comes back
// unchanged, for the caller to refuse.
//
// normalize never modifies v: a []any or map[string]any that holds only
// normal values is returned as is, and one that does not is copied.
func normalize(v any) any {
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return v
	case []byte:
		if x == nil {
			return nil
		}
		return v
	case uint64:
		return normUint(x)
	case int:
		return int64(x)
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint:
		return normUint(uint64(x))
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case float32:
		return float64(x)
	case []any:
		if x == nil {
			return nil
		}
		if isNormal(v) {
			return v
		}
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = normalize(e)
		}
		return s
	case map[string]any:
		if x == nil {
			return nil
		}
		if isNormal(v) {
			return v
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalize(e)
		}
		return m
	}
	return normalizeReflect(reflect.ValueOf(v), v)
}

// normalizeReflect handles what normalize's type switch does not: named
// types and other slices, arrays, maps and pointers. orig is returned for
// kinds it leaves alone.
func normalizeReflect(rv reflect.Value, orig any) any {
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return normUint(rv.Uint())
	case reflect.Float32, reflect.Float64:
		return rv.Float()
	case reflect.String:
		return rv.String()
	case reflect.Slice:
		if rv.IsNil() {
			return nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return rv.Bytes()
		}
		return normalizeList(rv)
	case reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(b), rv)
			return b
		}
		return normalizeList(rv)
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return orig
		}
		if rv.IsNil() {
			return nil
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = normalize(it.Value().Interface())
		}
		return m
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
		return normalize(rv.Elem().Interface())
	}
	return orig
}

func normalizeList(rv reflect.Value) []any {
	s := make([]any, rv.Len())
	for i := range s {
		s[i] = normalize(rv.Index(i).Interface())
	}
	return s
}

// normUint returns u as int64 when it fits, so that an unsigned number and
// a signed one of the same value compare equal without the caller caring
// how msgpack chose to write it (a compact encoder writes 200 as uint8).
func normUint(u uint64) any {
	if u > math.MaxInt64 {
		return u
	}
	return int64(u)
}

// isNormal reports whether v is already what normalize would return.
func isNormal(v any) bool {
	switch x := v.(type) {
	case nil, bool, int64, float64, string:
		return true
	case []byte:
		return x != nil
	case uint64:
		return x > math.MaxInt64
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isNormal(e) {
				return false
			}
		}
		return true
	case map[string]any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isNormal(e) {
				return false
			}
		}
		return true
	}
	return false
}

// normalizeOwned is normalize for values the codec has just built and
// nobody else holds: it converts []any and map[string]any in place
// instead of copying them.
func normalizeOwned(v any) any {
	switch x := v.(type) {
	case []any:
		if x == nil {
			return nil
		}
		for i, e := range x {
			x[i] = normalizeOwned(e)
		}
		return x
	case map[string]any:
		if x == nil {
			return nil
		}
		for k, e := range x {
			x[k] = normalizeOwned(e)
		}
		return x
	}
	return normalize(v)
}

// canonExpr normalizes a decoded filter in place: loose numbers in values,
// and nil for empty args, which omitempty could not have written.
func canonExpr(e *Expr) {
	if e == nil {
		return
	}
	e.Value = normalizeOwned(e.Value)
	e.Args = nilIfEmpty(e.Args)
	for _, a := range e.Args {
		canonExpr(a)
	}
}

func nilIfEmpty[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

// --- Encoding ---

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

// --- The validating reader ---

// reader walks msgpack bytes without trusting them: every length a header
// declares is checked against the bytes that remain before anything is
// read or allocated, and arrays and maps may nest at most maxDepth deep.
type reader struct {
	b        []byte
	pos      int
	maxDepth int
	// unique rejects a key repeated within a map (requests).
	unique bool
}

// kind is the type of a msgpack value, as the reader sees it.
type kind uint8

const (
	kindNil kind = iota
	kindBool
	kindInt
	kindUint
	kindFloat32
	kindFloat64
	kindStr
	kindBin
	kindArray
	kindMap
)

var kindNames = [...]string{"nil", "bool", "int", "uint", "float32", "float64", "str", "bin", "array", "map"}

func (k kind) String() string { return kindNames[k] }

// item is one msgpack value's header, with the scalar it holds.
type item struct {
	kind kind
	off  int // of the header, for errors
	// n is, by kind: bool 0 or 1; int the value in two's complement; uint
	// the value; floats the IEEE bits; array the element count; map the
	// pair count.
	n uint64
	// data is the payload of a str or bin, aliasing the input.
	data []byte
}

// mapHint caps the size hint of a decoded map: a header may declare up to
// half the remaining bytes as pairs, and a map sized for all of them costs
// some 40 bytes a pair before a single key has been seen to be distinct.
const mapHint = 1024

// next reads one header, and the whole value for scalars, str and bin. For
// an array or a map it checks that the remaining bytes could hold the
// declared elements (one byte at least each) and stops after the header.
func (r *reader) next() (item, error) {
	it := item{off: r.pos}
	if r.pos >= len(r.b) {
		return it, fmt.Errorf("%w: value expected at offset %d, input ends", ErrTruncated, r.pos)
	}
	c := r.b[r.pos]
	r.pos++
	switch {
	case c <= 0x7f: // positive fixint
		it.kind, it.n = kindInt, uint64(c)
		return it, nil
	case c >= 0xe0: // negative fixint
		it.kind, it.n = kindInt, uint64(int64(int8(c)))
		return it, nil
	case c <= 0x8f:
		return r.container(it, kindMap, uint64(c&0x0f))
	case c <= 0x9f:
		return r.container(it, kindArray, uint64(c&0x0f))
	case c <= 0xbf:
		return r.payload(it, kindStr, uint64(c&0x1f))
	}
	switch c {
	case 0xc0:
		it.kind = kindNil
		return it, nil
	case 0xc2, 0xc3:
		it.kind, it.n = kindBool, uint64(c&1)
		return it, nil
	case 0xc4, 0xc5, 0xc6: // bin 8, 16, 32
		return r.sized(it, kindBin, 1<<(c-0xc4))
	case 0xd9, 0xda, 0xdb: // str 8, 16, 32
		return r.sized(it, kindStr, 1<<(c-0xd9))
	case 0xdc, 0xdd: // array 16, 32
		n, err := r.uint(it, 2<<(c-0xdc))
		if err != nil {
			return it, err
		}
		return r.container(it, kindArray, n)
	case 0xde, 0xdf: // map 16, 32
		n, err := r.uint(it, 2<<(c-0xde))
		if err != nil {
			return it, err
		}
		return r.container(it, kindMap, n)
	case 0xca, 0xcb: // float 32, 64
		var err error
		it.kind = kindFloat32 + kind(c-0xca)
		it.n, err = r.uint(it, 4<<(c-0xca))
		return it, err
	case 0xcc, 0xcd, 0xce, 0xcf: // uint 8, 16, 32, 64
		w := 1 << (c - 0xcc)
		var err error
		it.kind = kindUint
		it.n, err = r.uint(it, w)
		return it, err
	case 0xd0, 0xd1, 0xd2, 0xd3: // int 8, 16, 32, 64
		w := 1 << (c - 0xd0)
		u, err := r.uint(it, w)
		// Sign-extend from w bytes.
		shift := 64 - 8*uint(w)
		it.kind, it.n = kindInt, uint64(int64(u<<shift)>>shift)
		return it, err
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16
		if _, err := r.payload(it, kindBin, 1+1<<(c-0xd4)); err != nil {
			return it, err
		}
		return it, fmt.Errorf("%w: extension at offset %d", ErrUnsupportedType, it.off)
	case 0xc7, 0xc8, 0xc9: // ext 8, 16, 32: length, then a type byte
		n, err := r.uint(it, 1<<(c-0xc7))
		if err != nil {
			return it, err
		}
		if _, err := r.payload(it, kindBin, n+1); err != nil {
			return it, err
		}
		return it, fmt.Errorf("%w: extension at offset %d", ErrUnsupportedType, it.off)
	}
	return it, fmt.Errorf("%w: reserved code 0x%02x at offset %d", ErrUnsupportedType, c, it.off)
}

// uint reads a w-byte big-endian length or number.
func (r *reader) uint(it item, w int) (uint64, error) {
	if rem := len(r.b) - r.pos; rem < w {
		return 0, fmt.Errorf("%w: %d-byte field of the value at offset %d, %d bytes remain", ErrTruncated, w, it.off, rem)
	}
	var u uint64
	for _, c := range r.b[r.pos : r.pos+w] {
		u = u<<8 | uint64(c)
	}
	r.pos += w
	return u, nil
}

// sized reads a w-byte length, then that many bytes of payload.
func (r *reader) sized(it item, k kind, w int) (item, error) {
	n, err := r.uint(it, w)
	if err != nil {
		return it, err
	}
	return r.payload(it, k, n)
}

func (r *reader) payload(it item, k kind, n uint64) (item, error) {
	if rem := uint64(len(r.b) - r.pos); n > rem {
		return it, fmt.Errorf("%w: %s at offset %d declares %d bytes, %d remain", ErrTruncated, k, it.off, n, rem)
	}
	it.kind = k
	it.data = r.b[r.pos : r.pos+int(n) : r.pos+int(n)]
	r.pos += int(n)
	return it, nil
}

func (r *reader) container(it item, k kind, n uint64) (item, error) {
	need := n
	if k == kindMap {
		need = 2 * n // n < 2^32, so no overflow
	}
	if rem := uint64(len(r.b) - r.pos); need > rem {
		return it, fmt.Errorf("%w: %s at offset %d declares %d elements, %d bytes remain", ErrTruncated, k, it.off, n, rem)
	}
	it.kind, it.n = k, n
	return it, nil
}

// enter checks that a container read at depth d (the containers around
// it) stays within maxDepth.
func (r *reader) enter(it item, d int) error {
	if d >= r.maxDepth {
		return fmt.Errorf("%w: %s at offset %d is nested %d deep, max %d", ErrTooDeep, it.kind, it.off, d+1, r.maxDepth)
	}
	return nil
}

// topMap reads the header of the top-level value, which must be a map.
func (r *reader) topMap() (item, error) {
	it, err := r.next()
	if err != nil {
		return it, err
	}
	if it.kind != kindMap {
		return it, fmt.Errorf("%w: top-level value is %s", ErrNotMap, it.kind)
	}
	return it, r.enter(it, 0)
}

// end checks that the value read was the whole input.
func (r *reader) end() error {
	if r.pos != len(r.b) {
		return fmt.Errorf("%w: %d bytes after offset %d", ErrTrailingBytes, len(r.b)-r.pos, r.pos)
	}
	return nil
}

// key reads a map key, which must be a str.
func (r *reader) key() ([]byte, error) {
	it, err := r.next()
	if err != nil {
		return nil, err
	}
	if it.kind != kindStr {
		return nil, fmt.Errorf("%w: map key at offset %d is %s", ErrNotMap, it.off, it.kind)
	}
	return it.data, nil
}

// skip validates one value enclosed by d containers, building nothing.
func (r *reader) skip(d int) error {
	it, err := r.next()
	if err != nil {
		return err
	}
	switch it.kind {
	case kindArray:
		if err := r.enter(it, d); err != nil {
			return err
		}
		for range it.n {
			if err := r.skip(d + 1); err != nil {
				return err
			}
		}
	case kindMap:
		if err := r.enter(it, d); err != nil {
			return err
		}
		return r.skipMap(it, d+1)
	}
	return nil
}

// smallMap is the pair count up to which duplicate keys are found by
// comparing with the keys before, without allocating.
const smallMap = 16

// skipMap validates the pairs of a map whose header was it, the pairs
// enclosed by d containers.
func (r *reader) skipMap(it item, d int) error {
	var (
		small [smallMap][]byte
		seen  map[string]struct{}
	)
	for i := range it.n {
		off := r.pos
		k, err := r.key()
		if err != nil {
			return err
		}
		if r.unique {
			dup := false
			if i < smallMap {
				for _, p := range small[:i] {
					dup = dup || bytes.Equal(p, k)
				}
				small[i] = k
			} else {
				if seen == nil {
					// No size hint: the header's count is not yet
					// evidence of distinct keys.
					seen = make(map[string]struct{})
					for _, p := range small {
						seen[string(p)] = struct{}{}
					}
				}
				_, dup = seen[string(k)]
				seen[string(k)] = struct{}{}
			}
			if dup {
				return fmt.Errorf("%w: %q at offset %d", ErrDuplicateKey, k, off)
			}
		}
		if err := r.skip(d); err != nil {
			return err
		}
	}
	return nil
}

// value decodes one value enclosed by d containers into the types
// normalize returns, checking as skip does.
func (r *reader) value(d int) (any, error) {
	it, err := r.next()
	if err != nil {
		return nil, err
	}
	switch it.kind {
	case kindNil:
		return nil, nil
	case kindBool:
		return it.n != 0, nil
	case kindInt:
		return int64(it.n), nil
	case kindUint:
		return normUint(it.n), nil
	case kindFloat32:
		return float64(math.Float32frombits(uint32(it.n))), nil
	case kindFloat64:
		return math.Float64frombits(it.n), nil
	case kindStr:
		return string(it.data), nil
	case kindBin:
		return bytes.Clone(it.data), nil // non-nil even when empty
	case kindArray:
		if err := r.enter(it, d); err != nil {
			return nil, err
		}
		// it.n <= the bytes remaining, so this is bounded by the input.
		s := make([]any, it.n)
		for i := range s {
			if s[i], err = r.value(d + 1); err != nil {
				return nil, err
			}
		}
		return s, nil
	default: // kindMap
		if err := r.enter(it, d); err != nil {
			return nil, err
		}
		m := make(map[string]any, min(it.n, mapHint))
		if err := r.mapInto(m, it.n, d+1); err != nil {
			return nil, err
		}
		return m, nil
	}
}

// mapInto decodes n pairs enclosed by d containers into m; a repeated key
// keeps its last value.
func (r *reader) mapInto(m map[string]any, n uint64, d int) error {
	for range n {
		k, err := r.key()
		if err != nil {
			return err
		}
		v, err := r.value(d)
		if err != nil {
			return err
		}
		m[string(k)] = v
	}
	return nil
}

// check validates b as one msgpack map of at most maxBytes, nested at
// most maxDepth deep, with nothing after it.
func check(b []byte, maxBytes, maxDepth int, unique bool) error {
	if len(b) > maxBytes {
		return fmt.Errorf("%w: %d bytes, cap %d", ErrTooLarge, len(b), maxBytes)
	}
	r := reader{b: b, maxDepth: maxDepth, unique: unique}
	it, err := r.topMap()
	if err != nil {
		return err
	}
	if err := r.skipMap(it, 1); err != nil {
		return err
	}
	return r.end()
}

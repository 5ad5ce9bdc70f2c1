package coproc

import (
	"bytes"
	"fmt"
	"math"
)

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

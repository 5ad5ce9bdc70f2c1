package coproc

import (
	"bytes"
	"fmt"
	"math"
)

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

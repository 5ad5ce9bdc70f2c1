// Package record is the row layout of the runner's own bindings (coopkvdb,
// badger4db): a YCSB record under the key table + ":" + key ([Key]), as
// one msgpack map of field name to value (msgpack bin), in field-name
// order — coopkv's row encoding, which its coprocessor reads as it is.
// Every binding that writes records through it stores the same bytes, so
// the stores compared differ in their engines, not in their codecs.
//
// Encoders are pooled ([GetEncoder], [Encoder.Release]); [Decode] reads a
// record in place, its values aliasing the bytes it was given.
package record

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Key is the store key of a record: table + ":" + key, as go-ycsb's badger
// binding lays its records out.
func Key(table, key string) []byte {
	k := make([]byte, 0, len(table)+1+len(key))
	k = append(k, table...)
	k = append(k, ':')
	return append(k, key...)
}

// TablePrefix is the prefix of every key of table's records.
func TablePrefix(table string) []byte { return Key(table, "") }

// TableEnd is the first key past every record of table: ';' follows ':'.
func TableEnd(table string) []byte {
	return append([]byte(table), ':'+1)
}

// An Encoder encodes records into a buffer it reuses: the bytes of Encode
// are valid until the next Encode or the Encoder's Release.
type Encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &Encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

// GetEncoder returns an Encoder from the pool; Release gives it back.
func GetEncoder() *Encoder { return encoders.Get().(*Encoder) }

// Release gives e back to the pool: neither e nor the bytes it returned
// may be used after.
func (e *Encoder) Release() {
	if e.buf.Cap() > 64<<10 {
		return // an outsized record; let the buffer go
	}
	encoders.Put(e)
}

// Encode returns values as one msgpack map of string to bin, in field
// name order, so that a record's bytes depend on its contents only.
func (e *Encoder) Encode(values map[string][]byte) ([]byte, error) {
	e.buf.Reset()
	if err := e.enc.EncodeMapLen(len(values)); err != nil {
		return nil, err
	}
	var small [16]string
	names := small[:0]
	for f := range values {
		names = append(names, f)
	}
	slices.Sort(names)
	for _, f := range names {
		if err := e.enc.EncodeString(f); err != nil {
			return nil, err
		}
		if err := e.enc.EncodeBytes(values[f]); err != nil {
			return nil, err
		}
	}
	return e.buf.Bytes(), nil
}

// decoder reads one record in place. names interns the field names it has
// met, so that a record of known fields costs one allocation (its map); a
// record with unusual names costs one string each past maxNames.
type decoder struct {
	r     bytes.Reader
	dec   *msgpack.Decoder
	names map[string]string
}

const maxNames = 256

var decoders = sync.Pool{New: func() any {
	return &decoder{dec: msgpack.NewDecoder(nil), names: make(map[string]string)}
}}

// Decode decodes the fields of the record b (every field when fields is
// empty) and skips the others. The values alias b, as go-ycsb's own row
// codec does: b must be the caller's to give away (kv.Get's result is, a
// badger value only once copied).
func Decode(b []byte, fields []string) (map[string][]byte, error) {
	d := decoders.Get().(*decoder)
	defer func() {
		d.dec.Reset(nil)
		decoders.Put(d)
	}()
	d.r.Reset(b)
	d.dec.Reset(&d.r) // a bytes.Reader is an io.ByteScanner: no bufio in between
	n, err := d.dec.DecodeMapLen()
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	size := n
	if len(fields) > 0 {
		size = min(n, len(fields))
	}
	m := make(map[string][]byte, max(size, 0))
	for range n {
		name, err := d.inPlace(b)
		if err != nil {
			return nil, fmt.Errorf("record field name: %w", err)
		}
		f, wanted := d.name(name, fields)
		if !wanted {
			if err := d.dec.Skip(); err != nil {
				return nil, fmt.Errorf("record field %s: %w", name, err)
			}
			continue
		}
		v, err := d.inPlace(b)
		if err != nil {
			return nil, fmt.Errorf("record field %s: %w", f, err)
		}
		m[f] = v
	}
	return m, nil
}

// inPlace reads the next str or bin header and returns its bytes as a
// slice of b, the decoder's input, capped so an append cannot reach past
// them.
func (d *decoder) inPlace(b []byte) ([]byte, error) {
	n, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, err
	}
	if n < 0 { // nil
		return nil, nil
	}
	off := len(b) - d.r.Len()
	if n > d.r.Len() {
		return nil, fmt.Errorf("msgpack: %d bytes wanted, %d left: %w", n, d.r.Len(), io.ErrUnexpectedEOF)
	}
	if _, err := d.r.Seek(int64(n), io.SeekCurrent); err != nil {
		return nil, err
	}
	return b[off : off+n : off+n], nil
}

// name returns the field name as a string, and whether it is one of
// fields (every name is when fields is empty), without allocating for a
// name in fields or one met before.
func (d *decoder) name(name []byte, fields []string) (string, bool) {
	if len(fields) > 0 {
		for _, f := range fields {
			if f == string(name) {
				return f, true
			}
		}
		return "", false
	}
	if f, ok := d.names[string(name)]; ok {
		return f, true
	}
	f := string(name)
	if len(d.names) < maxNames {
		d.names[f] = f
	}
	return f, true
}

// Merge decodes the record b whole, writes values over its fields and
// encodes the result with e: a YCSB update's read-modify-write of one
// record. The bytes returned are e's (see [Encoder]).
func (e *Encoder) Merge(b []byte, values map[string][]byte) ([]byte, error) {
	m, err := Decode(b, nil)
	if err != nil {
		return nil, err
	}
	for f, v := range values {
		m[f] = v
	}
	return e.Encode(m)
}

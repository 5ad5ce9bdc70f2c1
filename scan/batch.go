package scan

import "slices"

// Batch is a run of rows in one contiguous buffer. Keys and values returned
// by Key and Value alias the buffer: they are valid until the batch is
// reused (for a Stream consumer, until its next call of Stream.Next).
type Batch struct {
	buf []byte
	// ends holds, for row i, the end of its key at 2i and the end of its
	// value at 2i+1, as offsets into buf.
	ends []int
	// cooled: a step of a read in cooldown filled it (see stream.Next).
	cooled bool
}

// Len is the number of rows.
func (b *Batch) Len() int { return len(b.ends) / 2 }

// Bytes is the size of the keys and values held.
func (b *Batch) Bytes() int { return len(b.buf) }

// Key returns row i's key.
func (b *Batch) Key(i int) []byte {
	start := 0
	if i > 0 {
		start = b.ends[2*i-1]
	}
	end := b.ends[2*i]
	return b.buf[start:end:end]
}

// Value returns row i's value (empty for a keys-only scan).
func (b *Batch) Value(i int) []byte {
	start, end := b.ends[2*i], b.ends[2*i+1]
	return b.buf[start:end:end]
}

func (b *Batch) reset() {
	b.buf = b.buf[:0]
	b.ends = b.ends[:0]
}

// grow makes room for bytes of keys and values and for rows rows.
func (b *Batch) grow(bytes, rows int) {
	b.buf = slices.Grow(b.buf, bytes)
	b.ends = slices.Grow(b.ends, 2*rows)
}

func (b *Batch) add(k, v []byte) {
	b.buf = append(b.buf, k...)
	b.ends = append(b.ends, len(b.buf))
	b.buf = append(b.buf, v...)
	b.ends = append(b.ends, len(b.buf))
}

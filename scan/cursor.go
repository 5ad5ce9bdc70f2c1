package scan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/coopkv/coopkv/internal/valfmt"
)

// Batch sizes, in rows, and the byte cap of one batch.
const (
	MinBatchRows  = 32
	MaxBatchRows  = 1024
	MaxBatchBytes = 1 << 20
	// CooledBatchRows caps the batches of a read in cooldown (a demoted
	// step): its consumer gives its P back after each (see stream.Next),
	// so the program's other goroutines wait for at most this many rows.
	CooledBatchRows = 64
)

// The errors of an invalid Spec, which NewCursor validates (once: callers
// need not call Validate first). A store maps them to its own errors.
var (
	// ErrInvalidRange is returned for a range whose start is after its end.
	ErrInvalidRange = errors.New("scan: invalid range: start > end")
	// ErrNegativeLimit is returned for a Spec whose Limit is negative.
	ErrNegativeLimit = errors.New("scan: negative limit")
)

// Spec says what a scan reads: keys in [Start, End) — nil Start is the first
// key, nil End is past the last — in ascending order or, with Reverse,
// descending; at most Limit rows (0 = no limit); without values if KeysOnly.
type Spec struct {
	Start, End []byte
	Limit      int
	Reverse    bool
	KeysOnly   bool
	// MaxBatch caps the rows of a batch below MaxBatchRows (0 = no cap
	// below it): a reader that does more work per row than copying it (the
	// coprocessor) keeps its units of work, and so its preemption points,
	// short.
	MaxBatch int
	// Tagged says the values carry the embedded store's tag (package
	// internal/valfmt): the cursor returns them without it and skips the
	// rows expired at Now (Unix nanoseconds), which count toward no Limit.
	// A cursor over Rows ignores both.
	Tagged bool
	Now    int64
	// Earliest, when not nil, is lowered to the earliest expiry among the
	// rows the cursor returns (a transaction's read set needs it).
	Earliest *atomic.Int64
}

// Validate reports a range that cannot be scanned.
func (s *Spec) Validate() error {
	if s.Start != nil && s.End != nil && bytes.Compare(s.Start, s.End) > 0 {
		return fmt.Errorf("%w: [%q, %q)", ErrInvalidRange, s.Start, s.End)
	}
	if s.Limit < 0 {
		return fmt.Errorf("%w %d", ErrNegativeLimit, s.Limit)
	}
	return nil
}

// Reader opens Pebble iterators: a *pebble.DB or a *pebble.Snapshot.
type Reader interface {
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// Rows is a source of rows other than Pebble for a Cursor (NewCursorOver):
// another backend's scan of one Spec, already in the Spec's order and
// within its bounds. It has the method set of kv.Rows, so one backend type
// serves both.
type Rows interface {
	// Next returns the next row: its key and value need stay valid only
	// until the next call of Next or Close. At the end it returns io.EOF,
	// or the error that ended the scan.
	Next() (key, value []byte, err error)
	// Close ends the scan and frees what it holds.
	Close() error
}

// Cursor reads a Spec from one Pebble iterator — or from a backend's Rows
// — a batch at a time. It is not safe for concurrent use; a Task steps it
// from one goroutine at a time.
//
// The Pebble iterator is a concrete field, not an interface: the embedded
// store's rows, the hot path, pay no interface call per row. Only a
// cursor over Rows (it nil) takes the other branch.
type Cursor struct {
	it      *pebble.Iterator
	src     *overRows // set instead of it by NewCursorOver
	spec    Spec
	started bool
	done    bool
	emitted int
	rows    int // the next batch's target size
	avgRow  int // bytes per row in the last batch, to size the next
	// cap caps the next batch's rows when positive (CooledBatchRows for
	// a read in cooldown), whatever rows says.
	cap int
}

// NewCursor opens an iterator on r for spec. The iterator pins the state of
// the store at this call: the cursor never sees a later write.
func NewCursor(r Reader, spec Spec) (*Cursor, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: spec.Start, UpperBound: spec.End})
	if err != nil {
		return nil, fmt.Errorf("open iterator: %w", err)
	}
	return &Cursor{it: it, spec: spec, rows: firstBatchRows(spec.Limit)}, nil
}

// overRows is a cursor's Rows and its current row: behind a pointer, so
// that a Pebble cursor grows by one word, not five.
type overRows struct {
	r    Rows
	k, v []byte
	err  error // why r ended, when not io.EOF
}

// NewCursorOver returns a cursor that reads spec's rows from r, which must
// already be bounded to spec and ordered as it says (Reverse); the cursor
// applies Limit and KeysOnly and sizes the batches as for Pebble. It owns
// r: Close closes it, and so does NewCursorOver when spec is invalid.
func NewCursorOver(r Rows, spec Spec) (*Cursor, error) {
	if err := spec.Validate(); err != nil {
		_ = r.Close()
		return nil, err
	}
	return &Cursor{src: &overRows{r: r}, spec: spec, rows: firstBatchRows(spec.Limit)}, nil
}

// firstBatchRows is the first batch's size: MinBatchRows, so that a long
// scan's first rows come soon, but a scan limited to at most MaxBatchRows
// reads all of them in one batch — a short scan is then one step and one
// hand-off, or none (ShortLimit).
func firstBatchRows(limit int) int {
	if ShortLimit(limit) {
		return max(limit, MinBatchRows)
	}
	return MinBatchRows
}

// ShortLimit reports whether a scan with this limit is short: it fits in
// its first batch, and costs about what a Get does.
func ShortLimit(limit int) bool { return limit > 0 && limit <= MaxBatchRows }

// Done reports whether the cursor has produced its last row.
func (c *Cursor) Done() bool { return c.done }

// BatchRows is the size, in rows, the next batch will aim at.
func (c *Cursor) BatchRows() int { return c.rows }

// Fill resets b and fills it with the next rows, up to the current batch
// size or MaxBatchBytes (at least one row), and doubles the batch size for
// the next call. It returns the rows and bytes read. Between calls the
// iterator rests on the last row emitted; the next call moves past it.
func (c *Cursor) Fill(b *Batch) (rows, bytes int64, err error) { return c.fillUnless(b, nil) }

// Preempter says whether the step reading a batch should end it early, for
// more urgent work ([readpool.StepContext] is one).
type preempter interface{ Preempted() bool }

// preemptEvery is how many rows a batch reads between looks at its
// Preempter: a look is an atomic load; 64 rows of 100 bytes take a few µs.
const preemptEvery = 64

// FillUnless is Fill that ends the batch early, after a multiple of
// preemptEvery rows, once p says more urgent work waits (p may be nil).
// The batch then holds fewer rows than asked; the scan goes on from there.
func (c *Cursor) fillUnless(b *Batch, p preempter) (rows, bytes int64, err error) {
	b.reset()
	if c.done {
		return 0, 0, nil
	}
	want := c.rows
	if c.cap > 0 {
		want = min(want, c.cap)
	}
	if c.spec.Limit > 0 {
		want = min(want, c.spec.Limit-c.emitted)
	}
	// Size the buffer once from the last batch's rows, rather than let
	// append double it (and copy it) its way up in every new batch.
	if c.avgRow > 0 {
		sizeFor(b, want, c.avgRow)
	}
	var valid bool
	switch {
	case !c.started:
		c.started = true
		valid = c.move(true)
	default:
		valid = c.move(false)
	}
	tagged := c.spec.Tagged && c.it != nil
	// visited counts the rows read, expired ones too, so that a range of
	// expired rows still ends its batch (empty) at the batch's size.
	visited := 0
	for valid {
		visited++
		var v []byte
		if !c.spec.KeysOnly || tagged {
			if v, err = c.value(); err != nil {
				return int64(b.Len()), int64(b.Bytes()), fmt.Errorf("read value of %q: %w", c.key(), err)
			}
		}
		if tagged {
			var exp int64
			if v, exp, err = valfmt.Decode(v); err != nil {
				return int64(b.Len()), int64(b.Bytes()), fmt.Errorf("read value of %q: %w", c.key(), err)
			}
			if valfmt.Expired(exp, c.spec.Now) {
				if visited >= want || (p != nil && visited%preemptEvery == 0 && p.Preempted()) {
					break
				}
				valid = c.move(false)
				continue
			}
			if c.spec.Earliest != nil {
				valfmt.Note(c.spec.Earliest, exp)
			}
			if c.spec.KeysOnly {
				v = nil
			}
		}
		b.add(c.key(), v)
		if b.Len() == 1 && c.avgRow == 0 && want > 1 && b.Bytes() < MaxBatchBytes {
			// A scan's first batch: size it from its first row, rather
			// than let append double the buffer (and copy it) its way up.
			sizeFor(b, want, b.Bytes()+1)
		}
		if visited >= want || b.Bytes() >= MaxBatchBytes {
			break
		}
		if p != nil && visited%preemptEvery == 0 && p.Preempted() {
			break
		}
		valid = c.move(false)
	}
	if err := c.iterErr(); err != nil {
		return int64(b.Len()), int64(b.Bytes()), fmt.Errorf("iterate: %w", err)
	}
	c.emitted += b.Len()
	if b.Len() > 0 {
		c.avgRow = b.Bytes()/b.Len() + 1
	}
	if !valid || (c.spec.Limit > 0 && c.emitted >= c.spec.Limit) {
		c.done = true
	}
	c.rows = min(c.rows*2, MaxBatchRows)
	if c.spec.MaxBatch > 0 {
		c.rows = min(c.rows, max(c.spec.MaxBatch, MinBatchRows))
	}
	return int64(b.Len()), int64(b.Bytes()), nil
}

// sizeFor makes room in b for rows rows in all (those it holds included)
// of about row bytes each, up to the batch byte cap and one row past it.
func sizeFor(b *Batch, rows, row int) {
	b.grow(max(min(rows*row, MaxBatchBytes+row)-b.Bytes(), 0), max(rows-b.Len(), 0))
}

// move moves to the first row in scan order (first) or to the next one.
func (c *Cursor) move(first bool) bool {
	switch {
	case c.it == nil:
		return c.nextSrc()
	case c.spec.Reverse && first:
		return c.it.Last()
	case c.spec.Reverse:
		return c.it.Prev()
	case first:
		return c.it.First()
	default:
		return c.it.Next()
	}
}

// nextSrc moves a cursor over Rows to its next row. At the end the row is
// nil and srcErr says why, unless the end was io.EOF.
func (c *Cursor) nextSrc() bool {
	o := c.src
	if o == nil || o.r == nil { // a closed cursor
		return false
	}
	k, v, err := o.r.Next()
	ok := err == nil
	if !ok {
		k, v = nil, nil
	}
	if err != nil && err != io.EOF {
		o.err = err
	}
	o.k, o.v = k, v
	return ok
}

func (c *Cursor) key() []byte {
	if c.it == nil {
		return c.src.k
	}
	return c.it.Key()
}

func (c *Cursor) value() ([]byte, error) {
	if c.it == nil {
		return c.src.v, nil
	}
	return c.it.ValueAndErr()
}

func (c *Cursor) iterErr() error {
	switch {
	case c.it != nil:
		return c.it.Error()
	case c.src != nil:
		return c.src.err
	}
	return nil
}

// Close closes the iterator (or the Rows). Idempotent.
func (c *Cursor) Close() error {
	var err error
	switch {
	case c.it != nil:
		err = c.it.Close()
		c.it = nil
	case c.src != nil && c.src.r != nil:
		err = c.src.r.Close()
		c.src.r = nil
	default:
		return nil
	}
	c.done = true
	return err
}

package scan

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/readpool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memPebble opens an empty Pebble in memory, closed when t ends.
func memPebble(t *testing.T) *pebble.DB {
	t.Helper()
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quiet{}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func openPebble(t *testing.T, n, valueSize int) *pebble.DB {
	t.Helper()
	db := memPebble(t)
	b := db.NewBatch()
	for i := range n {
		require.NoError(t, b.Set(fmt.Appendf(nil, "k%06d", i), make([]byte, valueSize), nil))
	}
	require.NoError(t, b.Commit(pebble.NoSync))
	return db
}

type quiet struct{}

func (quiet) Infof(string, ...any)  {}
func (quiet) Errorf(string, ...any) {}
func (quiet) Fatalf(f string, a ...any) {
	panic(fmt.Sprintf(f, a...))
}

func TestCursor_BatchSizesGrow(t *testing.T) {
	db := openPebble(t, 5000, 8)
	c, err := NewCursor(db, Spec{})
	require.NoError(t, err)
	defer c.Close()
	var sizes []int
	var b Batch
	total := 0
	for !c.Done() {
		rows, bytes, err := c.Fill(&b)
		require.NoError(t, err)
		assert.EqualValues(t, b.Len(), rows)
		assert.EqualValues(t, b.Bytes(), bytes)
		sizes = append(sizes, b.Len())
		for i := range b.Len() {
			require.Equal(t, fmt.Sprintf("k%06d", total+i), string(b.Key(i)))
			require.Len(t, b.Value(i), 8)
		}
		total += b.Len()
	}
	assert.Equal(t, 5000, total)
	assert.Equal(t, []int{32, 64, 128, 256, 512, 1024, 1024, 1024, 936}, sizes)
}

func TestCursor_ReverseLimitKeysOnlyBounds(t *testing.T) {
	db := openPebble(t, 100, 8)
	c, err := NewCursor(db, Spec{Start: []byte("k000010"), End: []byte("k000090"), Reverse: true, Limit: 45, KeysOnly: true})
	require.NoError(t, err)
	defer c.Close()
	var keys []string
	var b Batch
	for !c.Done() {
		_, _, err := c.Fill(&b)
		require.NoError(t, err)
		for i := range b.Len() {
			keys = append(keys, string(b.Key(i)))
			assert.Empty(t, b.Value(i))
		}
	}
	require.Len(t, keys, 45)
	assert.Equal(t, "k000089", keys[0])
	assert.Equal(t, "k000045", keys[44])
}

func TestCursor_ByteCapBoundsABatch(t *testing.T) {
	db := openPebble(t, 100, 100<<10) // 100 KiB values
	c, err := NewCursor(db, Spec{})
	require.NoError(t, err)
	defer c.Close()
	var b Batch
	_, _, err = c.Fill(&b)
	require.NoError(t, err)
	assert.Equal(t, 11, b.Len(), "stops at the first row past 1 MiB, not at 32 rows")
	assert.LessOrEqual(t, b.Bytes(), MaxBatchBytes+(100<<10)+16)
}

func TestSpec_Validate(t *testing.T) {
	assert.ErrorIs(t, (&Spec{Start: []byte("b"), End: []byte("a")}).Validate(), ErrInvalidRange)
	assert.ErrorIs(t, (&Spec{Limit: -1}).Validate(), ErrNegativeLimit)
	assert.NoError(t, (&Spec{Start: []byte("a"), End: []byte("a")}).Validate(), "empty, not invalid")
	assert.NoError(t, (&Spec{End: []byte("a")}).Validate())
}

// spawnScan starts a full scan of db on a one-worker pool.
func spawnScan(t *testing.T, db *pebble.DB) (*Cursor, *stream, *readpool.Handle) {
	t.Helper()
	p, err := readpool.New(readpool.Options{Workers: 1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	c, err := NewCursor(db, Spec{})
	require.NoError(t, err)
	s := newStream(2)
	h, err := p.Spawn(context.Background(), newTask(c, s), readpool.SpawnOptions{})
	require.NoError(t, err)
	return c, s, h
}

func TestTask_ReservesBeforeProducing(t *testing.T) {
	db := openPebble(t, 20000, 8) // outside the bubble: Pebble's goroutines are not the test's
	synctest.Test(t, func(t *testing.T) {
		_, s, h := spawnScan(t, db)

		b, err := s.Next(nil)
		require.NoError(t, err)
		require.Equal(t, 32, b.Len())
		// Holding one batch, the task can fill one more and must then wait.
		synctest.Wait()
		require.Positive(t, h.Stats().Pendings, "the task waits for a slot")
		st := s.Stats()
		assert.Equal(t, 2, st.Held)
		assert.Equal(t, 2, st.MaxHeld)
		assert.EqualValues(t, 32+64, h.Stats().Rows, "no batch was read without a slot")

		rows := b.Len()
		for {
			b, err = s.Next(b)
			require.NoError(t, err)
			if b == nil {
				break
			}
			rows += b.Len()
		}
		assert.Equal(t, 20000, rows)
		<-s.Finished()
		assert.Equal(t, 2, s.Stats().MaxHeld)
	})
}

func TestTask_CancelClosesIterator(t *testing.T) {
	c, s, h := spawnScan(t, openPebble(t, 20000, 8))
	_, err := s.Next(nil)
	require.NoError(t, err)
	myErr := fmt.Errorf("stop")
	h.Cancel(myErr)
	<-s.Finished()
	assert.True(t, c.Done())
	assert.Nil(t, c.it, "the Pebble iterator is closed (db.Close would report a leak)")
	for {
		b, err := s.Next(nil)
		if b == nil {
			assert.ErrorIs(t, err, myErr)
			break
		}
	}
}

func TestCursor_MaxBatchCapsGrowth(t *testing.T) {
	db := openPebble(t, 500, 8)
	c, err := NewCursor(db, Spec{MaxBatch: 100})
	require.NoError(t, err)
	defer c.Close()
	var sizes []int
	var b Batch
	for !c.Done() {
		_, _, err := c.Fill(&b)
		require.NoError(t, err)
		sizes = append(sizes, b.Len())
	}
	assert.Equal(t, []int{32, 64, 100, 100, 100, 100, 4}, sizes)
}

// testPreempter says "urgent work waits" from its after-th look on, and counts
// its looks.
type testPreempter struct{ looks, after int }

func (p *testPreempter) Preempted() bool { p.looks++; return p.looks > p.after }

func TestCursor_FillUnlessEndsABatchForUrgentWork(t *testing.T) {
	db := openPebble(t, 5000, 8)
	c, err := NewCursor(db, Spec{})
	require.NoError(t, err)
	defer c.Close()
	var b Batch
	// Grow the batch size to 1,024 rows.
	for c.BatchRows() < MaxBatchRows {
		_, _, err := c.Fill(&b)
		require.NoError(t, err)
	}
	read := 32 + 64 + 128 + 256 + 512
	// Urgent work from the third look on: the batch ends at 3 × 64 rows,
	// and the scan goes on from the next key, losing nothing.
	p := &testPreempter{after: 2}
	rows, _, err := c.fillUnless(&b, p)
	require.NoError(t, err)
	assert.EqualValues(t, 3*preemptEvery, rows)
	assert.Equal(t, 3, p.looks, "one look per 64 rows")
	assert.Equal(t, fmt.Sprintf("k%06d", read), string(b.Key(0)))
	read += int(rows)
	// Nobody urgent: a whole batch.
	rows, _, err = c.fillUnless(&b, &testPreempter{after: 1 << 30})
	require.NoError(t, err)
	assert.EqualValues(t, MaxBatchRows, rows)
	assert.Equal(t, fmt.Sprintf("k%06d", read), string(b.Key(0)))
	read += int(rows)
	for !c.Done() {
		n, _, err := c.fillUnless(&b, nil)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("k%06d", read), string(b.Key(0)))
		read += int(n)
	}
	assert.Equal(t, 5000, read)
}

// A scan's first batch is sized from its first row: one buffer, not a
// buffer doubled (and copied) its way up to the batch's rows.
func TestCursor_FirstBatchSizedFromItsFirstRow(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts under the race detector include Pebble's invariant checks")
	}
	const runs = 20
	db := openPebble(t, 200, 1000)
	cursors := make([]*Cursor, runs+1) // AllocsPerRun runs once more to warm up
	for i := range cursors {
		c, err := NewCursor(db, Spec{Limit: 100})
		require.NoError(t, err)
		defer c.Close()
		cursors[i] = c
	}
	i := 0
	allocs := testing.AllocsPerRun(runs, func() {
		var b Batch
		_, _, err := cursors[i].Fill(&b)
		i++
		require.NoError(t, err)
		require.Equal(t, 100, b.Len())
	})
	// The buffer and the row ends, made for the first row and grown once
	// after it, and Pebble's own few; doubling its way up made 26.
	assert.LessOrEqual(t, allocs, 8.0)
}

// TestCursor_FirstBatchBufferStaysNearTheCap: sizing the first batch from
// its first row makes room up to the byte cap and one row past it, in all:
// rows near the cap do not get a second cap's worth on top, and a first
// row past the cap, which ends the batch alone, gets no more room.
func TestCursor_FirstBatchBufferStaysNearTheCap(t *testing.T) {
	for _, c := range []struct {
		name      string
		valueSize int
	}{
		{"a row past the cap", MaxBatchBytes * 8},
		{"rows near the cap", MaxBatchBytes / 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openPebble(t, 6, c.valueSize)
			cur, err := NewCursor(db, Spec{})
			require.NoError(t, err)
			defer cur.Close()
			var b Batch
			_, n, err := cur.Fill(&b)
			require.NoError(t, err)
			row := int(n) / b.Len()
			assert.LessOrEqual(t, cap(b.buf), max(int(n), MaxBatchBytes+row)*9/8,
				"%d rows of %d bytes", b.Len(), row)
		})
	}
}

// A stream read to its end gives its batches back for the next scan; one
// closed early keeps them (its consumer may be reading one as it closes).
func TestStream_RecyclesBatchesOnlyAtItsEnd(t *testing.T) {
	db := openPebble(t, 5000, 8)
	p := newPool(t, readpool.Options{Workers: 1})
	c, err := NewCursor(db, Spec{})
	require.NoError(t, err)
	r, err := Spawn(context.Background(), p, c, readpool.SpawnOptions{})
	require.NoError(t, err)
	assert.Equal(t, 5000, readAll(t, r, nil))
	assert.Empty(t, r.s.free, "every batch went back")
	require.NoError(t, r.Close())

	c, err = NewCursor(db, Spec{})
	require.NoError(t, err)
	r, err = Spawn(context.Background(), p, c, readpool.SpawnOptions{})
	require.NoError(t, err)
	b, err := r.Next()
	require.NoError(t, err)
	require.NotNil(t, b)
	require.NoError(t, r.Close())
	assert.Equal(t, "k000000", string(b.Key(0)), "the batch the consumer held is still its own")
}

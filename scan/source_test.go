package scan

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// newPool starts a pool that the test closes.
func newPool(t *testing.T, o readpool.Options) *readpool.Pool {
	t.Helper()
	p, err := readpool.New(o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// sources opens a reader of db for spec of each kind.
func sources(t *testing.T, db *pebble.DB) map[string]func(ctx context.Context, spec Spec) (Source, *Cursor) {
	return sourcesOn(t, db, readpool.Options{Workers: 1})
}

// sourcesOn is sources with the pooled reader on a pool of options o.
func sourcesOn(t *testing.T, db *pebble.DB, o readpool.Options) map[string]func(ctx context.Context, spec Spec) (Source, *Cursor) {
	p := newPool(t, o)
	return map[string]func(context.Context, Spec) (Source, *Cursor){
		"pooled": func(ctx context.Context, spec Spec) (Source, *Cursor) {
			c, err := NewCursor(db, spec)
			require.NoError(t, err)
			r, err := Spawn(ctx, p, c, readpool.SpawnOptions{})
			require.NoError(t, err)
			return r, c
		},
		"direct": func(ctx context.Context, spec Spec) (Source, *Cursor) {
			c, err := NewCursor(db, spec)
			require.NoError(t, err)
			return NewDirect(ctx, c, nil), c
		},
	}
}

// readAll reads r to its end, requiring every row's key to be the next of
// k000000, k000001, …, and calling each (if not nil) with every batch. It
// returns the rows read.
func readAll(t *testing.T, r Source, each func(b *Batch)) int {
	t.Helper()
	total := 0
	for {
		b, err := r.Next()
		require.NoError(t, err)
		if b == nil {
			return total
		}
		for i := range b.Len() {
			require.Equal(t, fmt.Sprintf("k%06d", total+i), string(b.Key(i)))
		}
		total += b.Len()
		if each != nil {
			each(b)
		}
	}
}

func TestSource_ReadsEverythingInGrowingBatches(t *testing.T) {
	db := openPebble(t, 5000, 8)
	// A slice of an hour: the batch sizes are the growth rule's, never cut
	// short by a used slice (see unitEnd) on a slow run.
	for name, open := range sourcesOn(t, db, readpool.Options{Workers: 1, TimeSlice: time.Hour}) {
		t.Run(name, func(t *testing.T) {
			r, c := open(context.Background(), Spec{})
			var sizes []int
			total := readAll(t, r, func(b *Batch) { sizes = append(sizes, b.Len()) })
			assert.Equal(t, 5000, total)
			assert.Equal(t, []int{32, 64, 128, 256, 512, 1024, 1024, 1024, 936}, sizes)
			b, err := r.Next()
			assert.Nil(t, b)
			assert.NoError(t, err, "the end repeats")
			require.NoError(t, r.Close())
			assert.Nil(t, c.it, "the Pebble iterator is closed")
			st := r.Stats()
			assert.EqualValues(t, 5000, st.Rows)
			assert.Positive(t, st.Steps)
			assert.LessOrEqual(t, st.MaxBuffered, DefaultBuffer)
		})
	}
}

// TestSource_CooledDownReadsInSmallBatches: a read in cooldown (a demoted
// task) fills batches of at most CooledBatchRows, marked cooled, so that
// its consumer gives its P back after each (stream.Next); the same scan not
// demoted grows its batches as before. Either way it reads every row once.
func TestSource_CooledDownReadsInSmallBatches(t *testing.T) {
	db := openPebble(t, 3000, 8)
	p := newPool(t, readpool.Options{Workers: 1, TimeSlice: time.Hour})
	for _, demoted := range []bool{true, false} {
		t.Run(fmt.Sprintf("demoted=%v", demoted), func(t *testing.T) {
			c, err := NewCursor(db, Spec{})
			require.NoError(t, err)
			r, err := Spawn(context.Background(), p, c, readpool.SpawnOptions{Demoted: demoted})
			require.NoError(t, err)
			defer r.Close()
			largest, cooled, batches := 0, 0, 0
			total := readAll(t, r, func(b *Batch) {
				largest = max(largest, b.Len())
				batches++
				if b.cooled {
					cooled++
				}
			})
			assert.Equal(t, 3000, total)
			if demoted {
				assert.Equal(t, CooledBatchRows, largest)
				assert.Equal(t, batches, cooled, "every batch marked cooled")
			} else {
				assert.Equal(t, MaxBatchRows, largest)
				assert.Zero(t, cooled)
			}
		})
	}
}

func TestSource_CloseFreesAtOnceAndEndsNext(t *testing.T) {
	db := openPebble(t, 20000, 8)
	for name, open := range sources(t, db) {
		t.Run(name, func(t *testing.T) {
			r, c := open(context.Background(), Spec{})
			b, err := r.Next()
			require.NoError(t, err)
			require.NotNil(t, b)
			require.NoError(t, r.Close())
			assert.Nil(t, c.it, "Close returns once the Pebble iterator is closed")
			require.NoError(t, r.Close(), "idempotent")
			b, err = r.Next()
			assert.Nil(t, b, "nothing buffered is handed out after Close")
			assert.NoError(t, err)
		})
	}
}

func TestSource_EndReportsItsError(t *testing.T) {
	db := openPebble(t, 20000, 8)
	stop := errors.New("store closing")
	for name, open := range sources(t, db) {
		t.Run(name, func(t *testing.T) {
			r, c := open(context.Background(), Spec{})
			_, err := r.Next()
			require.NoError(t, err)
			r.End(stop)
			assert.Nil(t, c.it)
			b, err := r.Next()
			assert.Nil(t, b)
			assert.ErrorIs(t, err, stop)
			r.End(errors.New("later"))
			_, err = r.Next()
			assert.ErrorIs(t, err, stop, "the first ending stays")
			require.NoError(t, r.Close())
		})
	}
}

func TestSource_ContextEndsTheScan(t *testing.T) {
	db := openPebble(t, 20000, 8)
	for name, open := range sources(t, db) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			r, _ := open(ctx, Spec{})
			defer r.Close()
			_, err := r.Next()
			require.NoError(t, err)
			cancel()
			for {
				b, err := r.Next()
				if b == nil {
					assert.ErrorIs(t, err, context.Canceled)
					break
				}
			}
		})
	}
}

func TestSource_SnapshotAcrossYields(t *testing.T) {
	db := openPebble(t, 20000, 8)
	// A tiny slice makes every step yield after one batch.
	p := newPool(t, readpool.Options{Workers: 1, TimeSlice: 1})
	c, err := NewCursor(db, Spec{})
	require.NoError(t, err)
	r, err := Spawn(context.Background(), p, c, readpool.SpawnOptions{})
	require.NoError(t, err)
	defer r.Close()
	b, err := r.Next()
	require.NoError(t, err)
	rows := b.Len()
	require.NoError(t, db.DeleteRange([]byte("k"), []byte("l"), pebble.NoSync))
	for {
		b, err = r.Next()
		require.NoError(t, err)
		if b == nil {
			break
		}
		rows += b.Len()
	}
	assert.Equal(t, 20000, rows, "a delete after the scan began is invisible")
	assert.Positive(t, r.Stats().Yields)
}

func TestSpawn_RefusedClosesTheCursor(t *testing.T) {
	db := openPebble(t, 10, 8)
	p, err := readpool.New(readpool.Options{Workers: 1})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	c, err := NewCursor(db, Spec{})
	require.NoError(t, err)
	r, err := Spawn(context.Background(), p, c, readpool.SpawnOptions{})
	assert.Nil(t, r)
	assert.ErrorIs(t, err, readpool.ErrClosed)
	assert.Nil(t, c.it, "the cursor is closed: nothing is left to leak")
}

func TestDirect_EndedCalledOnceHoweverItEnds(t *testing.T) {
	db := openPebble(t, 100, 8)
	for _, c := range []struct {
		name string
		end  func(r *Direct)
	}{
		{"read to the end", func(r *Direct) {
			for b, _ := r.Next(); b != nil; b, _ = r.Next() {
			}
		}},
		{"closed", func(r *Direct) { _ = r.Close() }},
		{"ended", func(r *Direct) { r.End(errors.New("x")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cur, err := NewCursor(db, Spec{})
			require.NoError(t, err)
			var ended atomic.Int32
			r := NewDirect(context.Background(), cur, func() { ended.Add(1) })
			c.end(r)
			require.NoError(t, r.Close())
			r.End(errors.New("y"))
			assert.EqualValues(t, 1, ended.Load())
			assert.Nil(t, cur.it)
		})
	}
}

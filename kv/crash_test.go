package kv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crash tests run the store on Pebble's crashable in-memory filesystem
// (vfs.NewCrashableMem) and, after every acknowledged write, take crash
// clones of it — one holding exactly what was synced, one that also keeps a
// random share of what was not, as Pebble's TestWALHardCrashRandomized
// does — reopen each clone with Open and compare it with a model of the
// writes.
//
// The write sequence is seeded: the seed is logged, and -crash.seed=N
// replays it (the clones' random unsynced blocks also depend on which files
// Pebble's background work had written, so only the writes replay exactly).
// By default each test makes 200 writes, so it has 201 crash points (after
// 0 … 200 writes), each checked with two clones; a long run sets the number
// of writes:
//
//	COOPKV_CRASH_POINTS=5000 go test -race -run 'TestCrash_' -timeout 1h ./kv/

var crashSeed = flag.Uint64("crash.seed", 0, "seed of the crash tests (0 = from the clock); a failing run logs its seed")

const (
	defaultCrashPoints = 200
	crashKeySpace      = 50
	// crashFlushOneIn: after about one write in this many, and after the
	// middle one, the store is flushed, so that clones also hold sstables, a
	// MANIFEST that moved on and a second WAL, not only the first. (More
	// tables cost the race build dearly: Pebble records a stack for every
	// table iterator a Get opens.)
	crashFlushOneIn = 100
)

// TestCrash_SyncedWritesSurvive: with synced writes, a crash at any moment
// between writes loses nothing acknowledged, and nothing unacknowledged
// exists — the recovered store is exactly the model after the writes
// acknowledged before the crash.
func TestCrash_SyncedWritesSurvive(t *testing.T) { runCrash(t, false) }

// TestCrash_NoSyncLosesOnlyASuffix: with NoSync a crash may lose writes, but
// only the last ones, and never part of a batch — the recovered store is the
// model after some prefix of the acknowledged writes, and no shorter a
// prefix than the last Flush (whose sstables and MANIFEST are synced).
func TestCrash_NoSyncLosesOnlyASuffix(t *testing.T) { runCrash(t, true) }

// crashState is the store's contents as key → value.
type crashState map[string]string

func crashKey(i int) string { return fmt.Sprintf("k%02d", i) }

func runCrash(t *testing.T, noSync bool) {
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with: go test ./kv -run '%s' -crash.seed=%d)", seed, t.Name(), seed)
	points := defaultCrashPoints
	if s := os.Getenv("COOPKV_CRASH_POINTS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "COOPKV_CRASH_POINTS")
		require.Positive(t, n, "COOPKV_CRASH_POINTS")
		points = n
	}
	// The writes have their own generator so that they replay whatever the
	// clones draw.
	ops := rand.New(rand.NewPCG(seed, 1))
	clones := rand.New(rand.NewPCG(seed, 2))

	mem := vfs.NewCrashableMem()
	db, err := Open("", &Options{FS: mem, NoSync: noSync})
	require.NoError(t, err)
	defer func() { assert.NoError(t, db.Close()) }()

	// models[k] is the store after k acknowledged writes.
	model := crashState{}
	models := []crashState{maps.Clone(model)}
	durable := 0 // writes made durable by a Flush whatever NoSync says
	var lost, maxLost int
	check := func(k int) bool {
		t.Helper()
		for _, pct := range []int{0, 1 + clones.IntN(99)} {
			what := fmt.Sprintf("seed %d, crash after write %d, %d%% of unsynced data kept", seed, k, pct)
			fs := mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: pct, RNG: clones})
			got, ok := recoverCrashClone(t, fs, what)
			if !ok {
				return false
			}
			if !noSync {
				if !assert.Equal(t, models[k], got, "%s: the recovered store is not the model after the acknowledged writes", what) {
					return false
				}
				continue
			}
			j := -1
			for i := k; i >= 0; i-- {
				if maps.Equal(models[i], got) {
					j = i
					break
				}
			}
			if !assert.GreaterOrEqual(t, j, 0, "%s: the recovered store is the model after no prefix of the writes (a lost write that is not in the suffix, or a torn batch): %v", what, got) {
				return false
			}
			if !assert.GreaterOrEqual(t, j, durable, "%s: recovered the state after write %d, but writes up to %d were flushed", what, j, durable) {
				return false
			}
			if j < k {
				lost++
				maxLost = max(maxLost, k-j)
			}
		}
		return true
	}

	if !check(0) {
		return
	}
	for w := 1; w <= points; w++ {
		writeCrashOp(t, ops, db, model, w)
		models = append(models, maps.Clone(model))
		if ops.IntN(crashFlushOneIn) == 0 || w == points/2 {
			require.NoError(t, db.Flush())
			durable = w
		}
		if !check(w) {
			return
		}
	}
	t.Logf("%d writes, %d crash points, %d clones; clones that lost writes: %d (at most %d writes)", points, points+1, 2*(points+1), lost, maxLost)
}

// writeCrashOp makes write w — a Set, a Delete or a batch of 1–10 of them —
// and applies it to model once the store has acknowledged it. Values encode
// the write, the op in it and the key: "w<w>.<op>/<key>".
func writeCrashOp(t *testing.T, r *rand.Rand, db *DB, model crashState, w int) {
	t.Helper()
	value := func(op int, key string) string { return fmt.Sprintf("w%d.%d/%s", w, op, key) }
	key := crashKey(r.IntN(crashKeySpace))
	switch n := r.IntN(10); {
	case n < 4:
		v := value(0, key)
		require.NoError(t, db.Set([]byte(key), []byte(v)), "write %d: set %s", w, key)
		model[key] = v
	case n < 6:
		require.NoError(t, db.Delete([]byte(key)), "write %d: delete %s", w, key)
		delete(model, key)
	default:
		b := db.NewBatch()
		after := maps.Clone(model)
		for op := range 1 + r.IntN(10) {
			// A batch may write a key twice: the later op wins.
			key := crashKey(r.IntN(crashKeySpace))
			if r.IntN(3) == 0 {
				b.Delete([]byte(key))
				delete(after, key)
			} else {
				v := value(op, key)
				b.Set([]byte(key), []byte(v))
				after[key] = v
			}
		}
		require.NoError(t, db.Apply(b), "write %d: apply %d ops", w, b.Len())
		clear(model)
		maps.Copy(model, after)
	}
}

// recoverCrashClone opens the store on fs, reads it with a Get of every key
// of the key space and a full Scan, checks that the two agree, checks that
// the recovered store takes a write, and closes it. ok is false if a check
// failed.
func recoverCrashClone(t *testing.T, fs vfs.FS, what string) (got crashState, ok bool) {
	t.Helper()
	// No row cache: every Get reaches Pebble, and Open stays cheap.
	db, err := Open("", &Options{FS: fs, RowCacheSize: -1, CacheSize: 1 << 20})
	if !assert.NoError(t, err, "%s: open", what) {
		return nil, false
	}
	defer func() {
		if !assert.NoError(t, db.Close(), "%s: close", what) {
			ok = false
		}
	}()
	ctx := context.Background()

	got = crashState{}
	for i := range crashKeySpace {
		k := crashKey(i)
		v, err := db.Get(ctx, []byte(k))
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if !assert.NoError(t, err, "%s: get %s", what, k) {
			return nil, false
		}
		got[k] = string(v)
	}

	scanned := crashState{}
	var prev string
	it := db.Scan(ctx, nil, nil, nil)
	for it.Next() {
		k := string(it.Key())
		if !assert.Greater(t, k, prev, "%s: scan out of order", what) {
			break
		}
		prev = k
		scanned[k] = string(it.Value())
	}
	scanErr := it.Err()
	closeErr := it.Close()
	if !assert.NoError(t, scanErr, "%s: scan", what) || !assert.NoError(t, closeErr, "%s: iterator close", what) {
		return nil, false
	}
	if !assert.Equal(t, got, scanned, "%s: Get and Scan disagree", what) {
		return nil, false
	}

	// The recovered store is usable, not just readable.
	if !assert.NoError(t, db.Set([]byte("probe"), []byte("p")), "%s: set after recovery", what) {
		return nil, false
	}
	v, err := db.Get(ctx, []byte("probe"))
	if !assert.NoError(t, err, "%s: get after recovery", what) || !assert.Equal(t, "p", string(v), what) {
		return nil, false
	}
	return got, true
}

package kv

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// The bank test, as Badger runs it: accounts whose balances only move
// between one another, two at a time in one batch, so that the total never
// changes — and every reader that sees the store whole (a scan, a
// coprocessor aggregate) must find exactly that total, however its reading
// is cut into steps.
var bankSeed = flag.Uint64("bank-seed", 0, "seed of TestBank (0 = from the clock); a failing run prints its seed")

const (
	bankAccounts = 100
	bankInitial  = 1000
	bankTotal    = bankAccounts * bankInitial
	// bankTransfersEnv raises (or lowers) the transfers per configuration
	// for a long run.
	bankTransfersEnv = "COOPKV_BANK_TRANSFERS"
	bankWriters      = 4
	bankReadEvery    = 25 // transfers per read, at most
)

// The accounts are the keys [bankStart, bankEnd).
var bankStart, bankEnd = []byte("acct/"), []byte("acct0")

func bankKey(i int) []byte { return fmt.Appendf(nil, "acct/%03d", i) }

func bankRow(t testing.TB, balance int64) []byte {
	t.Helper()
	row, err := coproc.EncodeRow(map[string]any{"balance": balance})
	require.NoError(t, err)
	return row
}

// bankBalance decodes an account's row.
func bankBalance(row []byte) (int64, error) {
	m, err := coproc.DecodeRow(row)
	if err != nil {
		return 0, err
	}
	b, ok := m["balance"].(int64)
	if !ok {
		return 0, fmt.Errorf("balance is %T %v, not int64", m["balance"], m["balance"])
	}
	return b, nil
}

func bankTransfers(t *testing.T) int {
	n := 5000
	if testing.Short() {
		n = 1000
	}
	if s := os.Getenv(bankTransfersEnv); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err, "%s=%q", bankTransfersEnv, s)
		require.Positive(t, v, "%s", bankTransfersEnv)
		n = v
	}
	return n
}

func TestBank_ReadersSeeEveryBatchWhole(t *testing.T) {
	seed := *bankSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	transfers := bankTransfers(t)
	for _, c := range schedulerOptions {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("replay with: go test ./kv -run 'TestBank_ReadersSeeEveryBatchWhole/%s' -bank-seed %d (%d transfers; more with %s)",
				c.name, seed, transfers, bankTransfersEnv)
			o := c.opts
			// A tiny slice makes the pooled readers yield between batches,
			// and so read across many steps.
			o.InMemory, o.TimeSlice = true, 20*time.Microsecond
			db := openTest(t, "", &o)
			runBank(t, db, seed, transfers)
		})
	}
}

func runBank(t *testing.T, db *DB, seed uint64, transfers int) {
	b := db.NewBatch()
	for i := range bankAccounts {
		b.Set(bankKey(i), bankRow(t, bankInitial))
	}
	require.NoError(t, db.Apply(b))

	// ctx ends the readers once the writers are done, or everything at the
	// first failure.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Transfers lock their two accounts (in index order), so that two
	// writers never read-modify-write one account at once; readers take no
	// lock: they rely on Apply being atomic and reads using one snapshot.
	var locks [bankAccounts]sync.Mutex
	var moved atomic.Int64
	// tick paces the readers: at most one read starts per bankReadEvery
	// transfers, on an idle reader. Readers that loop flat out would
	// starve the writers' Gets under FIFO (each queues behind every step
	// of every scan), and the test would measure that rather than check
	// atomicity.
	tick := make(chan struct{})
	// next waits for the reader's next turn: false once the writers are
	// done (or a check failed).
	next := func() bool {
		select {
		case <-tick:
			return true
		case <-ctx.Done():
			return false
		}
	}
	var writers sync.WaitGroup
	for w := range bankWriters {
		n := transfers / bankWriters
		if w < transfers%bankWriters {
			n++
		}
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range n {
				if ctx.Err() != nil {
					return
				}
				if !bankTransfer(t, db, rng, &locks) {
					cancel()
					return
				}
				if moved.Add(1)%bankReadEvery == 0 {
					select {
					case tick <- struct{}{}:
					default: // every reader is busy reading
					}
				}
			}
		})
	}

	var scans, cops, multis, yields atomic.Int64
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			// At least one read each, also when the writers are quick.
			for first := true; first || next(); first = false {
				sum, rows, st, err := bankScan(db, r%2 == 1)
				if !assert.NoError(t, err) ||
					!assert.Equal(t, bankAccounts, rows, "accounts seen by a scan") ||
					!assert.Equal(t, int64(bankTotal), sum, "total seen by a scan after %d transfers", moved.Load()) {
					cancel()
					return
				}
				scans.Add(1)
				yields.Add(int64(st.Yields))
			}
		})
		readers.Go(func() {
			for first := true; first || next(); first = false {
				resp, err := db.Coprocessor(context.Background(), &coproc.Request{
					Ranges: []coproc.KeyRange{{Start: bankStart, End: bankEnd}},
					Aggs:   []coproc.Agg{{Func: "sum", Col: "balance", As: "total"}, {Func: "count", As: "n"}},
				})
				if !assert.NoError(t, err) || !assert.Len(t, resp.Rows, 1) ||
					!assert.EqualValues(t, bankAccounts, resp.Rows[0]["n"], "accounts seen by the coprocessor") ||
					!assert.EqualValues(t, bankTotal, resp.Rows[0]["total"], "total seen by the coprocessor after %d transfers", moved.Load()) {
					cancel()
					return
				}
				cops.Add(1)
			}
		})
		readers.Go(func() {
			// Every account, in a shuffled order with some twice: one view.
			rng := rand.New(rand.NewPCG(seed, uint64(100+r)))
			for first := true; first || next(); first = false {
				order := rng.Perm(bankAccounts)
				keys := make([][]byte, 0, bankAccounts+10)
				for _, i := range order {
					keys = append(keys, bankKey(i))
				}
				keys = append(keys, keys[:10]...)
				vals, err := db.MultiGet(context.Background(), keys)
				if !assert.NoError(t, err) || !assert.Len(t, vals, len(keys)) {
					cancel()
					return
				}
				var sum int64
				for j, v := range vals[:bankAccounts] {
					bal, err := bankBalance(v)
					if !assert.NoError(t, err, "account %d", order[j]) {
						cancel()
						return
					}
					sum += bal
				}
				if !assert.Equal(t, int64(bankTotal), sum, "total seen by a MultiGet after %d transfers", moved.Load()) ||
					!assert.Equal(t, vals[:10], vals[bankAccounts:], "a repeated key reads what its first read") {
					cancel()
					return
				}
				multis.Add(1)
			}
		})
	}

	writers.Wait()
	cancel()
	readers.Wait()
	if t.Failed() {
		return
	}
	assert.EqualValues(t, transfers, moved.Load())
	t.Logf("%d transfers; %d scans (%d yields), %d coprocessor sums, %d MultiGets, all saw %d", moved.Load(), scans.Load(), yields.Load(), cops.Load(), multis.Load(), bankTotal)

	// The end state, account by account.
	var sum int64
	for i := range bankAccounts {
		row, err := db.Get(context.Background(), bankKey(i))
		require.NoError(t, err)
		bal, err := bankBalance(row)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, bal, int64(0), "account %d", i)
		sum += bal
	}
	assert.Equal(t, int64(bankTotal), sum, "total of the final Gets")
}

// bankTransfer moves a random amount between two random accounts, in one
// batch. It reports false after a failed check.
func bankTransfer(t *testing.T, db *DB, rng *rand.Rand, locks *[bankAccounts]sync.Mutex) bool {
	from, to := rng.IntN(bankAccounts), rng.IntN(bankAccounts-1)
	if to >= from {
		to++
	}
	lo, hi := min(from, to), max(from, to)
	locks[lo].Lock()
	defer locks[lo].Unlock()
	locks[hi].Lock()
	defer locks[hi].Unlock()

	ctx := context.Background()
	var bal [2]int64
	for i, acct := range [2]int{from, to} {
		row, err := db.Get(ctx, bankKey(acct))
		if !assert.NoError(t, err, "account %d", acct) {
			return false
		}
		if bal[i], err = bankBalance(row); !assert.NoError(t, err, "account %d", acct) {
			return false
		}
	}
	amount := rng.Int64N(min(bal[0], 100) + 1) // balances stay >= 0
	b := db.NewBatch()
	for _, w := range [2]struct {
		acct    int
		balance int64
	}{{from, bal[0] - amount}, {to, bal[1] + amount}} {
		row, err := coproc.EncodeRow(map[string]any{"balance": w.balance})
		if !assert.NoError(t, err) {
			return false
		}
		b.Set(bankKey(w.acct), row)
	}
	return assert.NoError(t, db.Apply(b))
}

// bankScan sums the balances over one scan of the accounts.
func bankScan(db *DB, reverse bool) (sum int64, rows int, st ReadStats, err error) {
	it := db.Scan(context.Background(), bankStart, bankEnd, &ScanOptions{Reverse: reverse})
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	for it.Next() {
		bal, err := bankBalance(it.Value())
		if err != nil {
			return 0, rows, st, fmt.Errorf("%s: %w", it.Key(), err)
		}
		sum += bal
		rows++
	}
	return sum, rows, it.Stats(), it.Err()
}

// startTransfers fills the bank's accounts in db and starts bankWriters
// writers transferring between them until the returned stop is called
// (which waits for them); moved counts the transfers made.
func startTransfers(t *testing.T, db *DB, seed uint64) (moved *atomic.Int64, stop func()) {
	b := db.NewBatch()
	for i := range bankAccounts {
		b.Set(bankKey(i), bankRow(t, bankInitial))
	}
	require.NoError(t, db.Apply(b))
	var locks [bankAccounts]sync.Mutex
	var done atomic.Bool
	moved = new(atomic.Int64)
	var writers sync.WaitGroup
	for w := range bankWriters {
		writers.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for !done.Load() && bankTransfer(t, db, rng, &locks) {
				moved.Add(1)
			}
		})
	}
	return moved, func() {
		done.Store(true)
		writers.Wait()
	}
}

// bankKeys are the accounts' keys, in order.
func bankKeys() [][]byte {
	keys := make([][]byte, bankAccounts)
	for i := range keys {
		keys[i] = bankKey(i)
	}
	return keys
}

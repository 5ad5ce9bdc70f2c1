package kv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/coproc"
)

// The bank test, as Badger runs it: accounts whose balances only move
// between one another, two at a time in one batch (or one transaction), so
// that the total never changes — and every reader that sees the store
// whole (a scan, a coprocessor aggregate, a Txn) must find exactly that
// total, however its reading is cut into steps.
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
	runBankEverywhere(t, bankTransfers(t), false)
}

// TestBank_Transactions is the bank with no lock of its own: a transfer
// is one kv.Update that reads both balances and writes both, and only the
// store's conflict check keeps two transfers of one account from losing
// one another's update — half of them between ten hot accounts, so that
// they meet. Readers check the total through a Txn (a Scan and a MultiGet
// in one) and through a Snapshot (a Scan and a coprocessor sum on one);
// at the end every account holds what the committed transfers moved.
func TestBank_Transactions(t *testing.T) {
	// A transfer is a Txn: a snapshot, a MultiGet, a checked commit.
	runBankEverywhere(t, max(bankTransfers(t)/4, 1), true)
}

// runBankEverywhere runs the bank on every scheduler.
func runBankEverywhere(t *testing.T, transfers int, txn bool) {
	seed := *bankSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	for _, c := range schedulerOptions {
		t.Run(c.name, func(t *testing.T) {
			t.Logf("replay with: go test ./kv -run '%s' -bank-seed %d (%d transfers; more with %s)",
				t.Name(), seed, transfers, bankTransfersEnv)
			o := c.opts
			// A tiny slice makes the pooled readers yield between batches,
			// and so read across many steps.
			o.InMemory, o.TimeSlice = true, 20*time.Microsecond
			db := openTest(t, "", &o)
			runBank(t, db, seed, transfers, txn)
		})
	}
}

// bankView is what one reader saw of every account at once.
type bankView struct {
	sum          int64
	rows, yields int
}

// A bankReader reads every account, once or more in one view; reverse and
// rng vary how.
type bankReader struct {
	name string
	read func(reverse bool, rng *rand.Rand) ([]bankView, error)
}

// runBank runs transfers among the accounts, locked batches or (txn)
// kv.Updates, beside readers that check the total.
func runBank(t *testing.T, db *DB, seed uint64, transfers int, txn bool) {
	bankOpen(t, db)

	// ctx ends the readers once the writers are done, or everything at the
	// first failure.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Locked transfers lock their two accounts (in index order), so that
	// two writers never read-modify-write one account at once; readers take
	// no lock: they rely on Apply being atomic and reads using one
	// snapshot. Transactional ones take no lock at all.
	var locks [bankAccounts]sync.Mutex
	var bt bankTxns
	transfer := func(rng *rand.Rand) bool { return bankTransfer(t, db, rng, &locks) }
	readers := bankPlainReaders(db)
	if txn {
		transfer = func(rng *rand.Rand) bool { return bt.transfer(t, db, rng) }
		readers = bankTxnReaders(db)
	}
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
				if !transfer(rng) {
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

	reads := make([]atomic.Int64, len(readers))
	var yields atomic.Int64
	var group sync.WaitGroup
	for r := range 2 {
		for i, rd := range readers {
			group.Go(func() {
				rng := rand.New(rand.NewPCG(seed, uint64(100+10*r+i)))
				// At least one read each, also when the writers are quick.
				for first := true; first || next(); first = false {
					views, err := rd.read(r%2 == 1, rng)
					if !assert.NoError(t, err, rd.name) {
						cancel()
						return
					}
					for j, v := range views {
						if !assert.Equal(t, bankAccounts, v.rows, "accounts seen by %s (read %d)", rd.name, j) ||
							!assert.Equal(t, int64(bankTotal), v.sum, "total seen by %s (read %d) after %d transfers", rd.name, j, moved.Load()) {
							cancel()
							return
						}
						yields.Add(int64(v.yields))
					}
					reads[i].Add(1)
				}
			})
		}
	}

	writers.Wait()
	cancel()
	group.Wait()
	if t.Failed() {
		return
	}
	assert.EqualValues(t, transfers, moved.Load())
	var counts []string
	for i, rd := range readers {
		counts = append(counts, fmt.Sprintf("%d %s", reads[i].Load(), rd.name))
	}
	t.Logf("%d transfers; reads (%d yields): %s, all saw %d", moved.Load(), yields.Load(), strings.Join(counts, ", "), bankTotal)
	if txn {
		t.Logf("transactions: %d committed, %d gave up after %d conflicts in a row; %d conflicts in all",
			bt.committed.Load(), bt.gaveUp.Load(), updateAttempts, bt.conflicts.Load())
		assert.Positive(t, bt.committed.Load())
	}

	// The end state, account by account.
	var sum int64
	for i := range bankAccounts {
		row, err := db.Get(context.Background(), bankKey(i))
		require.NoError(t, err)
		bal, err := bankBalance(row)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, bal, int64(0), "account %d", i)
		if txn {
			assert.Equal(t, bankInitial+bt.delta[i].Load(), bal, "account %d: what the committed transfers moved", i)
		}
		sum += bal
	}
	assert.Equal(t, int64(bankTotal), sum, "total of the final Gets")
}

// bankPair draws two accounts among the first n.
func bankPair(rng *rand.Rand, n int) (from, to int) {
	from, to = rng.IntN(n), rng.IntN(n-1)
	if to >= from {
		to++
	}
	return from, to
}

// bankTransfer moves a random amount between two random accounts, in one
// batch. It reports false after a failed check.
func bankTransfer(t *testing.T, db *DB, rng *rand.Rand, locks *[bankAccounts]sync.Mutex) bool {
	from, to := bankPair(rng, bankAccounts)
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
	b.Set(bankKey(from), bankRow(t, bal[0]-amount))
	b.Set(bankKey(to), bankRow(t, bal[1]+amount))
	return assert.NoError(t, db.Apply(b))
}

// bankHot is how many accounts half the transactional transfers use.
const bankHot = 10

// bankTxns are the transactional transfers' counts: Updates committed
// and given up, conflicts, and each account's net change.
type bankTxns struct {
	committed, gaveUp, conflicts atomic.Int64
	delta                        [bankAccounts]atomic.Int64
}

// transfer moves a random amount between two accounts in one kv.Update,
// reading both balances in one MultiGet. It reports false after a failed
// check; giving up after updateAttempts conflicts is not one.
func (bt *bankTxns) transfer(t *testing.T, db *DB, rng *rand.Rand) bool {
	n := bankAccounts
	if rng.IntN(2) == 0 {
		n = bankHot
	}
	from, to := bankPair(rng, n)
	ctx := context.Background()
	var amount int64
	runs := 0
	err := Update(ctx, db, func(tx *Txn) error {
		runs++
		keys := [][]byte{bankKey(from), bankKey(to)}
		rows, err := tx.MultiGet(ctx, keys)
		if err != nil {
			return err
		}
		var bal [2]int64
		for i, row := range rows {
			if bal[i], err = bankBalance(row); err != nil {
				return fmt.Errorf("%s: %w", keys[i], err)
			}
		}
		amount = rng.Int64N(min(bal[0], 100) + 1)
		return errors.Join(tx.Set(keys[0], bankRow(t, bal[0]-amount)), tx.Set(keys[1], bankRow(t, bal[1]+amount)))
	})
	switch {
	case err == nil:
		bt.committed.Add(1)
		bt.conflicts.Add(int64(runs - 1))
		bt.delta[from].Add(-amount)
		bt.delta[to].Add(amount)
		return true
	case errors.Is(err, ErrConflict):
		bt.gaveUp.Add(1)
		bt.conflicts.Add(int64(runs))
		return true
	}
	return assert.NoError(t, err, "transfer %d -> %d", from, to)
}

// bankPlainReaders read the store itself: a Scan, a coprocessor sum and a
// MultiGet, each one view.
func bankPlainReaders(db *DB) []bankReader {
	one := func(v bankView, err error) ([]bankView, error) { return []bankView{v}, err }
	return []bankReader{
		{"scan", func(reverse bool, _ *rand.Rand) ([]bankView, error) { return one(bankScan(db, reverse)) }},
		{"coprocessor", func(bool, *rand.Rand) ([]bankView, error) { return one(bankSum(db)) }},
		{"MultiGet", func(_ bool, rng *rand.Rand) ([]bankView, error) { return one(bankMultiGet(db, rng)) }},
	}
}

// bankTxnReaders read twice in one view: a read-only Txn (a Scan, a
// MultiGet, a Commit) and a Snapshot (a Scan, a coprocessor sum).
func bankTxnReaders(db *DB) []bankReader {
	ctx := context.Background()
	return []bankReader{
		{"Txn", func(reverse bool, rng *rand.Rand) ([]bankView, error) {
			tx, err := db.NewTxn(ctx)
			if err != nil {
				return nil, err
			}
			defer tx.Rollback()
			scan, serr := bankScan(tx, reverse)
			multi, merr := bankMultiGet(tx, rng)
			return []bankView{scan, multi}, errors.Join(serr, merr, tx.Commit(ctx)) // read-only: no conflict
		}},
		{"Snapshot", func(reverse bool, _ *rand.Rand) ([]bankView, error) {
			snap, err := db.NewSnapshot(ctx)
			if err != nil {
				return nil, err
			}
			scan, serr := bankScan(snap, reverse)
			sum, cerr := bankSum(snap)
			return []bankView{scan, sum}, errors.Join(serr, cerr, snap.Close())
		}},
	}
}

// bankScan sums the balances over one scan of the accounts.
func bankScan(r interface {
	Scan(context.Context, []byte, []byte, *ScanOptions) *Iterator
}, reverse bool) (v bankView, err error) {
	it := r.Scan(context.Background(), bankStart, bankEnd, &ScanOptions{Reverse: reverse})
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	for it.Next() {
		bal, err := bankBalance(it.Value())
		if err != nil {
			return v, fmt.Errorf("%s: %w", it.Key(), err)
		}
		v.sum += bal
		v.rows++
	}
	v.yields = it.Stats().Yields
	return v, it.Err()
}

// bankSum sums the balances in one coprocessor request.
func bankSum(r interface {
	Coprocessor(context.Context, *coproc.Request) (*coproc.Response, error)
}) (bankView, error) {
	resp, err := r.Coprocessor(context.Background(), &coproc.Request{
		Ranges: []coproc.KeyRange{{Start: bankStart, End: bankEnd}},
		Aggs:   []coproc.Agg{{Func: "sum", Col: "balance", As: "total"}, {Func: "count", As: "n"}},
	})
	if err != nil {
		return bankView{}, err
	}
	if len(resp.Rows) != 1 {
		return bankView{}, fmt.Errorf("%d rows of aggregates, want 1", len(resp.Rows))
	}
	sum, _ := resp.Rows[0]["total"].(int64)
	n, _ := resp.Rows[0]["n"].(int64)
	return bankView{sum: sum, rows: int(n)}, nil
}

// bankMultiGet reads every account in one MultiGet, in a shuffled order
// with ten of them twice, which must read what their first read.
func bankMultiGet(r interface {
	MultiGet(context.Context, [][]byte) ([][]byte, error)
}, rng *rand.Rand) (bankView, error) {
	order := rng.Perm(bankAccounts)
	keys := make([][]byte, 0, bankAccounts+10)
	for _, i := range order {
		keys = append(keys, bankKey(i))
	}
	keys = append(keys, keys[:10]...)
	vals, err := r.MultiGet(context.Background(), keys)
	if err != nil {
		return bankView{}, err
	}
	if len(vals) != len(keys) {
		return bankView{}, fmt.Errorf("%d values for %d keys", len(vals), len(keys))
	}
	var v bankView
	for j, row := range vals[:bankAccounts] {
		bal, err := bankBalance(row) // fails for a missing account
		if err != nil {
			return v, fmt.Errorf("account %d: %w", order[j], err)
		}
		v.sum += bal
		v.rows++
	}
	for j := range 10 {
		if !bytes.Equal(vals[j], vals[bankAccounts+j]) {
			return v, fmt.Errorf("account %d read twice, two answers", order[j])
		}
	}
	return v, nil
}

// startTransfers fills the bank's accounts in db and starts bankWriters
// writers transferring between them until the returned stop is called
// (which waits for them); moved counts the transfers made, and going is
// closed once they have made warm, or once a writer stopped short of that
// (a transfer failed the test, or stop was called).
func startTransfers(t *testing.T, db *DB, seed uint64, warm int64) (moved *atomic.Int64, going <-chan struct{}, stop func()) {
	bankOpen(t, db)
	var locks [bankAccounts]sync.Mutex
	var done atomic.Bool
	moved = new(atomic.Int64)
	warmed := make(chan struct{})
	var once sync.Once
	var writers sync.WaitGroup
	for w := range bankWriters {
		writers.Go(func() {
			defer func() {
				if moved.Load() < warm {
					once.Do(func() { close(warmed) }) // stopped short
				}
			}()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for !done.Load() && bankTransfer(t, db, rng, &locks) {
				if moved.Add(1) == warm {
					once.Do(func() { close(warmed) })
				}
			}
		})
	}
	if warm <= 0 {
		once.Do(func() { close(warmed) })
	}
	return moved, warmed, func() {
		done.Store(true)
		writers.Wait()
	}
}

// bankOpen writes every account with its initial balance.
func bankOpen(t *testing.T, db *DB) {
	b := db.NewBatch()
	for i := range bankAccounts {
		b.Set(bankKey(i), bankRow(t, bankInitial))
	}
	require.NoError(t, db.Apply(b))
}

// bankKeys are the accounts' keys, in order.
func bankKeys() [][]byte {
	keys := make([][]byte, bankAccounts)
	for i := range keys {
		keys[i] = bankKey(i)
	}
	return keys
}

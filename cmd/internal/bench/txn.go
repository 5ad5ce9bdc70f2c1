package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/kv"
)

// The txn workload moves money between accounts in transactions
// (issue 30): --accounts accounts under accountPrefix, each given
// accountStart on every store before its phases (Setup), and --clients
// goroutines, back to back, each running transfers: kv.Update reads two
// distinct accounts and writes both, moving a random amount of at most
// maxTransfer from one to the other, never taking an account below zero.
// Transfers conflict when they share an account; --hot and
// --hot-accounts make them share more.
//
// What it counts: a transfer that committed is an operation of class
// "transfer", timed from its start to Update's return, retries and
// backoffs included; every attempt run again after kv.ErrConflict is a
// retry, and a transfer that ended in ErrConflict (Update gave up after
// its attempts) a failure — neither an operation nor an error (see
// classStats.txn). Other errors are errors, as in every workload.
//
// The check (Check): after every phase, warm-ups included, a read-only
// Txn reads every account; they must hold accountStart each on average,
// to the unit, and none below zero. Anything else fails the run (exit
// status 1): money was lost or made.

const (
	// accountPrefix is the accounts' keys' prefix, apart from the load's
	// keys (keyPrefix) and the soak's (soakPrefix); accountDigits the
	// width of their numbers. maxAccounts is the most --accounts: the
	// key of number maxAccounts, which ends the audit's range, still has
	// that width.
	accountPrefix = "acct/"
	accountDigits = 8
	maxAccounts   = 10_000_000
	// accountStart is every account's balance at the start.
	accountStart = 1_000
	// maxTransfer is the most one transfer moves; each draws its amount
	// uniformly from 1 … maxTransfer, and moves less if the account it
	// takes from holds less.
	maxTransfer = 100
	// setupBatch is how many accounts one batch of Setup writes.
	setupBatch = 1_000
	// auditTimeout bounds the read of every account after a phase, which
	// runs after the phase's context has ended.
	auditTimeout = time.Minute
)

// txnWorkload is the txn workload, with its flags' defaults.
func txnWorkload() Workload {
	w := &txnLoad{audits: map[string]audit{}}
	w.plain = plain{
		name:  "txn",
		short: "transfers between accounts in transactions: commits, conflicts, and no money lost",
		long: `txn moves money between accounts in optimistic transactions. Before each
scheduler's phases it sets --accounts accounts (keys "acct/00000000" …,
apart from the loaded keys, which it does not read) to 1,000 each; then
--clients goroutines, back to back, each run transfers: kv.Update reads two
distinct accounts in a transaction and writes both, moving a random amount
of 1 to 100 from one to the other (less if the first holds less, so that
no account goes below zero). Two transfers that share an account while
both are open conflict: the later to commit gets kv.ErrConflict and
kv.Update runs it again (at most 10 attempts in all, with a jittered
backoff from 1 ms to 64 ms).

The conflict rate: with --hot 0 (the default) both accounts are drawn
uniformly from all of them, so that 16 accounts make most transfers
collide and 10,000 few. --hot F makes a fraction F of the transfers move
money between two accounts of the hot set instead, the first
--hot-accounts accounts (16; all of them if there are fewer).

The "transfer" row: ops/s are the transfers committed per second; p50
and p99 are those of a whole kv.Update, from its start to its return,
retries and backoffs included; conflicts/s counts every kv.ErrConflict an
attempt met, retries the attempts run again after one, failures the
transfers that still conflicted after 10 attempts (neither ops nor
errors); conflicts = retries + failures. The JSON has them as
ops_per_sec, conflicts, conflicts_per_sec, retries and failures.

After every phase, warm-ups included, one transaction reads every
account: the total must be exactly --accounts × 1,000 and no account
below zero. A line under the table gives the total per scheduler; a
wrong total fails the run (exit status 1), saying how much money was lost
or made.`,
		classes: []class{classTransfer},
		clients: func(e *env) []client {
			cs := make([]client, w.clients.n)
			for i := range cs {
				cs[i] = w.transferClient(e.db, e.rand(i))
			}
			return cs
		},
	}
	return w
}

type txnLoad struct {
	plain
	clients     clientsFlag
	accounts    int
	hot         float64 // the fraction of transfers within the hot set
	hotAccounts int     // the hot set: the first hotAccounts accounts

	// st is the store Setup was given, which Check audits; audits are the
	// measured phases' audits, by scheduler, for Summarize.
	st     kv.Store
	audits map[string]audit
}

func (w *txnLoad) Flags(fs *pflag.FlagSet) {
	w.clients.add(fs, "client goroutines running transfers, back to back")
	fs.IntVar(&w.accounts, "accounts", 10_000, "accounts, each given 1,000 before each scheduler's phases: "+
		"transfers between few accounts conflict often (16: most of them), between many seldom")
	fs.Float64Var(&w.hot, "hot", 0, "the fraction of transfers, 0 to 1, between two accounts of the hot set "+
		"(--hot-accounts); the others are between two of all the accounts, drawn uniformly")
	fs.IntVar(&w.hotAccounts, "hot-accounts", 16, "the hot set: the first `N` accounts (all of them if --accounts is fewer)")
}

func (w *txnLoad) Validate() error {
	errs := []error{w.clients.validate(1, "")}
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if w.accounts < 2 || w.accounts > maxAccounts {
		bad("--accounts must be between 2 (a transfer needs two) and %d, not %d", maxAccounts, w.accounts)
	}
	if !(w.hot >= 0 && w.hot <= 1) { // NaN too
		bad("--hot must be a fraction between 0 and 1, not %v", w.hot)
	}
	if w.hotAccounts < 2 {
		bad("--hot-accounts must be at least 2 (a transfer needs two), not %d", w.hotAccounts)
	}
	return errors.Join(errs...)
}

// Setup sets every account to accountStart, so that each store's phases
// start from the same accounts whatever the last store's did to them
// (kvbench's stores share a directory; kvbench-tikv's are one store),
// and keeps st for Check.
func (w *txnLoad) Setup(st kv.Store) error {
	w.st = st
	value := strconv.AppendInt(nil, accountStart, 10)
	for n := 0; n < w.accounts; {
		b := st.NewBatch()
		for end := min(n+setupBatch, w.accounts); n < end; n++ {
			b.Set(appendAccount(nil, n), value)
		}
		if err := st.Write(context.Background(), b); err != nil {
			return fmt.Errorf("setting the accounts: %w", err)
		}
	}
	return nil
}

// Check audits the accounts after every phase: a total other than
// --accounts × accountStart, or an account below zero, fails the run.
// A measured phase's audit is kept for Summarize.
func (w *txnLoad) Check(m *Measured) error {
	ctx, cancel := context.WithTimeout(context.Background(), auditTimeout)
	defer cancel()
	a, err := auditAccounts(ctx, w.st, w.accounts)
	if err != nil {
		return err
	}
	if m.sched != "" {
		w.audits[m.sched] = a
	}
	return a.err()
}

// Summarize writes, per scheduler, the accounts' total after its
// measured phase.
func (w *txnLoad) Summarize(out io.Writer, rep *Report) error {
	var b strings.Builder
	for _, r := range rep.Results {
		a, ok := w.audits[r.Scheduler]
		if r.Workload != w.name || !ok {
			continue
		}
		if b.Len() == 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s %s: %s\n", w.name, r.Scheduler, a)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// transferClient returns a client running transfers on db back to back,
// its choices drawn from r: each committed one is timed from its start
// to Update's return, the conflicts are counted (see classStats.txn).
func (w *txnLoad) transferClient(db kv.Store, r *rand.Rand) client {
	return func(ctx context.Context, rec *recorder) {
		rec.transact(classTransfer)
		for ctx.Err() == nil {
			from, to := w.pick(r)
			amount := 1 + r.Int64N(maxTransfer)
			start := time.Now()
			err := transfer(ctx, db, from, to, amount, func() { rec.retry(classTransfer) })
			switch {
			case ctx.Err() != nil:
				return // the phase ended during it: not counted
			case errors.Is(err, kv.ErrConflict):
				rec.giveUp(classTransfer)
			default:
				rec.record(classTransfer, time.Since(start), err)
			}
		}
	}
}

// pick draws the two distinct accounts of a transfer: with probability
// --hot both from the hot set, else both from all the accounts.
func (w *txnLoad) pick(r *rand.Rand) (from, to int) {
	n := w.accounts
	if w.hot > 0 && r.Float64() < w.hot {
		n = min(w.hotAccounts, w.accounts)
	}
	from, to = r.IntN(n), r.IntN(n-1)
	if to >= from {
		to++
	}
	return from, to
}

// transfer moves amount from account from to account to in kv.Update on
// db — less if from holds less — and returns Update's error. retried is
// called on every attempt after the first: Update runs its function again
// only after a kv.ErrConflict.
func transfer(ctx context.Context, db kv.Store, from, to int, amount int64, retried func()) error {
	keys := [][]byte{appendAccount(nil, from), appendAccount(nil, to)}
	attempts := 0
	return kv.Update(ctx, db, func(tx *kv.Txn) error {
		if attempts++; attempts > 1 {
			retried()
		}
		vals, err := tx.MultiGet(ctx, keys)
		if err != nil {
			return err
		}
		var bal [2]int64
		for i, v := range vals {
			if bal[i], err = parseBalance(keys[i], v); err != nil {
				return err
			}
		}
		moved := min(amount, max(bal[0], 0)) // nothing from an account below zero (a broken store's)
		if err := tx.Set(keys[0], strconv.AppendInt(nil, bal[0]-moved, 10)); err != nil {
			return err
		}
		return tx.Set(keys[1], strconv.AppendInt(nil, bal[1]+moved, 10))
	})
}

// appendAccount appends the key of account n (0 ≤ n ≤ maxAccounts) to
// dst: accountPrefix and n in accountDigits digits, so that the keys'
// byte order is the accounts'.
func appendAccount(dst []byte, n int) []byte {
	return fmt.Appendf(append(dst, accountPrefix...), "%0*d", accountDigits, n)
}

// parseBalance reads the balance of the account under key; nil is a
// missing account.
func parseBalance(key, v []byte) (int64, error) {
	if v == nil {
		return 0, fmt.Errorf("account %s: missing", key)
	}
	b, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("account %s: balance %q: %w", key, v, err)
	}
	return b, nil
}

// audit is what the accounts held after a phase.
type audit struct {
	want     int   // the accounts there should be
	accounts int   // those found
	total    int64 // their balances' sum
	// negative is the first account found below zero, "" for none.
	negative string
}

// auditAccounts reads accounts 0 … n-1 of st in one read-only Txn: one
// view of every account, between two commits.
func auditAccounts(ctx context.Context, st kv.Store, n int) (audit, error) {
	a := audit{want: n}
	tx, err := st.NewTxn(ctx)
	if err != nil {
		return a, fmt.Errorf("reading the accounts: %w", err)
	}
	defer tx.Rollback()
	it := tx.Scan(ctx, appendAccount(nil, 0), appendAccount(nil, n), nil)
	var bad error // an account whose balance is no number
	for key, v := range it.All() {
		b, err := parseBalance(key, v)
		if err != nil {
			bad = err
			break
		}
		if b < 0 && a.negative == "" {
			a.negative = fmt.Sprintf("%s holds %d", key, b)
		}
		a.accounts++
		a.total += b
	}
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return a, fmt.Errorf("reading the accounts: %w", err)
	}
	return a, bad
}

// wantTotal is what the accounts hold in all, whatever the transfers.
func (a audit) wantTotal() int64 { return int64(a.want) * accountStart }

// String is the audit's line: the total, and what is wrong if anything
// is.
func (a audit) String() string {
	if err := a.err(); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("the %d accounts hold %d = %d × %d after the phase: ok", a.accounts, a.total, a.want, accountStart)
}

// err says what is wrong with the accounts; nil if nothing is.
func (a audit) err() error {
	var wrong []string
	if a.accounts != a.want {
		wrong = append(wrong, fmt.Sprintf("%d accounts found, want %d", a.accounts, a.want))
	}
	switch d := a.total - a.wantTotal(); {
	case d < 0:
		wrong = append(wrong, fmt.Sprintf("%d lost", -d))
	case d > 0:
		wrong = append(wrong, fmt.Sprintf("%d made", d))
	}
	if a.negative != "" {
		wrong = append(wrong, "an account below zero: "+a.negative)
	}
	if len(wrong) == 0 {
		return nil
	}
	return fmt.Errorf("the %d accounts hold %d in all, want %d × %d = %d: %s",
		a.accounts, a.total, a.want, accountStart, a.wantTotal(), strings.Join(wrong, ", "))
}

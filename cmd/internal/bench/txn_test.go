package bench

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

// TestRun_Txn runs txn briefly on the default schedulers: a transfer row
// per scheduler that committed transfers without errors, with its
// conflicts, retries and failures in the table and the JSON (zero or
// not), and a line per scheduler under the table with the accounts'
// total.
func TestRun_Txn(t *testing.T) {
	w := lookup(t, "txn")
	cfg := parseRun(t, w, "--accounts", "16", "--clients", "4")
	rep, out := runWith(t, cfg, w, &testStores{dir: t.TempDir()})
	assert.Equal(t, "txn", rep.Workload)
	var got [][3]string
	for _, r := range rep.Results {
		got = append(got, [3]string{r.Workload, r.Scheduler, r.Class})
		assert.Positive(t, r.Ops, "%s: transfers committed", r.Scheduler)
		assert.Zero(t, r.Errors, "%s\n%s", r.Scheduler, out)
		require.NotNil(t, r.Txns, "%s: the conflicts' figures", r.Scheduler)
		assert.Equal(t, r.Retries+r.Failures, r.Conflicts, "%s: every conflict is a retry or a failure", r.Scheduler)
		assert.InDelta(t, float64(r.Conflicts)/0.2, r.ConflictsPerSec, 1e-6, "%s: conflicts over the phase", r.Scheduler)
	}
	assert.Equal(t, [][3]string{{"txn", "mlfq", "transfer"}, {"txn", "fifo", "transfer"}, {"txn", "direct", "transfer"}}, got)

	b, err := os.ReadFile(cfg.JSONPath)
	require.NoError(t, err)
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	for _, r := range doc.Results {
		for _, f := range []string{"ops", "ops_per_sec", "p50_us", "p99_us", "conflicts", "conflicts_per_sec", "retries", "failures"} {
			assert.Contains(t, r, f, "%s's result", r["scheduler"])
		}
	}

	assert.Regexp(t, `(?m)^workload +scheduler +class +ops/s +conflicts/s +retries +failures +p50 +p99 +p99.9 +max +errors$`, out)
	for _, s := range []string{"mlfq", "fifo", "direct"} {
		assert.Regexp(t, `(?m)^txn +`+s+` +transfer +\d+ +\d+ +\d+ +\d+ `, out)
		assert.Contains(t, out, "\ntxn "+s+": the 16 accounts hold 16000 = 16 × 1000 after the phase: ok\n")
	}
}

// meddler is a *kv.DB whose Txns meet conflicts on purpose: once every
// every-th Txn has begun, a transaction of the meddler's own rewrites
// accounts 0 and 1 with what they hold, so that the Txn, which reads
// them, conflicts at its commit — and no money moves. With tamper set,
// the tamperAt-th Txn's start instead adds tamper to account 0, outside
// any transaction: money made, or lost. The Txns are those of one client
// (and the audit's): the counts are the client's.
type meddler struct {
	*kv.DB
	every    int64
	tamperAt int64
	tamper   int64
	n        atomic.Int64
}

func (m *meddler) NewTxn(ctx context.Context) (*kv.Txn, error) {
	tx, err := m.DB.NewTxn(ctx)
	if err != nil {
		return nil, err
	}
	n := m.n.Add(1)
	switch {
	case m.tamper != 0 && n == m.tamperAt:
		err = m.addTo(ctx, m.tamper)
	case m.every > 0 && (n-1)%m.every == 0:
		err = kv.Update(ctx, m.DB, func(own *kv.Txn) error { return rewrite(ctx, own, 0, 1) })
	}
	if err != nil {
		tx.Rollback()
		return nil, err
	}
	return tx, nil
}

// addTo adds d to account 0's balance, outside any transaction.
func (m *meddler) addTo(ctx context.Context, d int64) error {
	key := appendAccount(nil, 0)
	v, err := m.DB.Get(ctx, key)
	if err != nil {
		return err
	}
	b, err := parseBalance(key, v)
	if err != nil {
		return err
	}
	return m.DB.Set(key, strconv.AppendInt(nil, b+d, 10))
}

// rewrite writes accounts back with what they hold, in tx.
func rewrite(ctx context.Context, tx *kv.Txn, accounts ...int) error {
	for _, n := range accounts {
		key := appendAccount(nil, n)
		v, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		if err := tx.Set(key, v); err != nil {
			return err
		}
	}
	return nil
}

// meddled returns txn, its config and stores for a run on two accounts
// from one client, on mlfq, without a warm-up (args added), on stores
// that meddle makes of each *kv.DB.
func meddled(t *testing.T, meddle func(db *kv.DB) *meddler, args ...string) (*Config, Workload, Stores) {
	t.Helper()
	w := lookup(t, "txn")
	cfg := parseRun(t, w, append([]string{"--accounts", "2", "--clients", "1", "--schedulers", "mlfq", "--warmup", "0s"}, args...)...)
	return cfg, w, &testStores{dir: t.TempDir(), wrap: func(db *kv.DB) kv.Store { return meddle(db) }}
}

// TestRun_TxnCountsConflicts: when the first attempt of every transfer
// conflicts, every committed transfer took one retry — counted as a
// conflict — and none failed.
func TestRun_TxnCountsConflicts(t *testing.T) {
	cfg, w, stores := meddled(t, func(db *kv.DB) *meddler { return &meddler{DB: db, every: 2} })
	rep, out := runWith(t, cfg, w, stores)
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	require.Positive(t, r.Ops)
	require.NotNil(t, r.Txns)
	assert.Zero(t, r.Errors, out)
	assert.Zero(t, r.Failures)
	// The transfer the phase's end cut off may have begun its retry.
	assert.GreaterOrEqual(t, r.Retries, r.Ops, "a retry per transfer")
	assert.LessOrEqual(t, r.Retries, r.Ops+1, "a retry per transfer")
	assert.Equal(t, r.Retries, r.Conflicts)
	assert.Positive(t, r.ConflictsPerSec)
	assert.Contains(t, out, "txn mlfq: the 2 accounts hold 2000 = 2 × 1000 after the phase: ok")
}

// TestRun_TxnCountsFailures: when every attempt conflicts, kv.Update
// gives up after its 10: no transfer commits, each is a failure, and
// every attempt but its last a retry.
func TestRun_TxnCountsFailures(t *testing.T) {
	// Update's backoffs before the 10th attempt add up to 255 ms at most.
	cfg, w, stores := meddled(t, func(db *kv.DB) *meddler { return &meddler{DB: db, every: 1} }, "--duration", "800ms")
	rep, out := runWith(t, cfg, w, stores)
	require.Len(t, rep.Results, 1)
	r := rep.Results[0]
	require.NotNil(t, r.Txns)
	assert.Zero(t, r.Ops, "nothing committed")
	assert.Zero(t, r.Errors, "a failure is no error\n%s", out)
	require.Positive(t, r.Failures)
	assert.GreaterOrEqual(t, r.Retries, 9*r.Failures, "9 retries per failure")
	assert.Less(t, r.Retries, 9*(r.Failures+1), "and those of the transfer cut off")
	assert.Equal(t, r.Retries+r.Failures, r.Conflicts)
	assert.Regexp(t, `(?m)^txn +mlfq +transfer +0 +\d+ +\d+ +[1-9]\d* +- +- +- +- +0$`, out)
}

// TestRun_TxnFailsWhenMoneyIsLostOrMade: a store that loses money, or
// makes it, fails the run, saying how much.
func TestRun_TxnFailsWhenMoneyIsLostOrMade(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper int64
		want   string
	}{
		{"lost", -7, "mlfq txn: the 2 accounts hold 1993 in all, want 2 × 1000 = 2000: 7 lost"},
		{"made", 5, "mlfq txn: the 2 accounts hold 2005 in all, want 2 × 1000 = 2000: 5 made"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, w, stores := meddled(t, func(db *kv.DB) *meddler { return &meddler{DB: db, tamperAt: 3, tamper: tc.tamper} })
			cfg.Quiet = true
			var out strings.Builder
			err := Run(t.Context(), cfg, w, stores, &out, io.Discard)
			require.Error(t, err)
			assert.EqualError(t, err, tc.want)
			assert.Empty(t, out.String(), "a wrong answer ends the run")
		})
	}
}

func TestAudit(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    audit
		want string // "" = ok
	}{
		{"ok", audit{want: 16, accounts: 16, total: 16_000}, ""},
		{"lost", audit{want: 16, accounts: 16, total: 15_990}, "the 16 accounts hold 15990 in all, want 16 × 1000 = 16000: 10 lost"},
		{"made", audit{want: 2, accounts: 2, total: 2_001}, "the 2 accounts hold 2001 in all, want 2 × 1000 = 2000: 1 made"},
		{"missing", audit{want: 3, accounts: 2, total: 2_000}, "the 2 accounts hold 2000 in all, want 3 × 1000 = 3000: 2 accounts found, want 3, 1000 lost"},
		{"below zero", audit{want: 2, accounts: 2, total: 2_000, negative: "acct/00000001 holds -5"},
			"the 2 accounts hold 2000 in all, want 2 × 1000 = 2000: an account below zero: acct/00000001 holds -5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				assert.NoError(t, tc.a.err())
				assert.Equal(t, "the 16 accounts hold 16000 = 16 × 1000 after the phase: ok", tc.a.String())
				return
			}
			assert.EqualError(t, tc.a.err(), tc.want)
			assert.Equal(t, tc.want, tc.a.String())
		})
	}
}

// TestAuditAccounts reads what Setup wrote, and what a transfer left.
func TestAuditAccounts(t *testing.T) {
	db, err := kv.Open(t.TempDir(), &kv.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	w := lookup(t, "txn").(*txnLoad)
	flagsOf(t, w, "--accounts", "3")
	require.NoError(t, db.Set(appendAccount(nil, 3), []byte("77")), "not an account of this run: --accounts 3")
	require.NoError(t, w.Setup(db))
	a, err := auditAccounts(t.Context(), db, 3)
	require.NoError(t, err)
	assert.Equal(t, audit{want: 3, accounts: 3, total: 3_000}, a)

	require.NoError(t, db.Set(appendAccount(nil, 1), []byte("-4")))
	a, err = auditAccounts(t.Context(), db, 3)
	require.NoError(t, err)
	assert.Equal(t, audit{want: 3, accounts: 3, total: 1_996, negative: "acct/00000001 holds -4"}, a)

	require.NoError(t, db.Set(appendAccount(nil, 2), []byte("lots")))
	_, err = auditAccounts(t.Context(), db, 3)
	assert.ErrorContains(t, err, `account acct/00000002: balance "lots"`)

	require.NoError(t, w.Setup(db), "Setup sets the accounts again")
	a, err = auditAccounts(t.Context(), db, 3)
	require.NoError(t, err)
	assert.Equal(t, audit{want: 3, accounts: 3, total: 3_000}, a)
}

// TestTransfer moves what it was asked, never more than the first
// account holds, and counts no retry without a conflict.
func TestTransfer(t *testing.T) {
	db, err := kv.Open(t.TempDir(), &kv.Options{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	require.NoError(t, db.Set(appendAccount(nil, 0), []byte("150")))
	require.NoError(t, db.Set(appendAccount(nil, 1), []byte("1000")))
	balances := func() [2]string {
		var b [2]string
		for i := range b {
			v, err := db.Get(t.Context(), appendAccount(nil, i))
			require.NoError(t, err)
			b[i] = string(v)
		}
		return b
	}
	retried := func() { t.Error("a retry without a conflict") }
	require.NoError(t, transfer(t.Context(), db, 0, 1, 100, retried))
	assert.Equal(t, [2]string{"50", "1100"}, balances())
	require.NoError(t, transfer(t.Context(), db, 0, 1, 100, retried))
	assert.Equal(t, [2]string{"0", "1150"}, balances(), "what the account held, not more")
	require.NoError(t, transfer(t.Context(), db, 0, 1, 100, retried))
	assert.Equal(t, [2]string{"0", "1150"}, balances(), "nothing from an empty account")
	require.NoError(t, transfer(t.Context(), db, 1, 0, 30, retried))
	assert.Equal(t, [2]string{"30", "1120"}, balances())

	require.NoError(t, db.Delete(appendAccount(nil, 0)))
	assert.ErrorContains(t, transfer(t.Context(), db, 1, 0, 30, retried), "account acct/00000000: missing")
}

func TestTxnLoad_Pick(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		args                  []string
		bound                 int     // every account drawn is below it
		wantHot, wantHotUpper float64 // the share of transfers within the first 16, at least and at most
	}{
		{"uniform", []string{"--accounts", "10000"}, 10_000, 0, 0.01},
		{"all hot", []string{"--accounts", "10000", "--hot", "1"}, 16, 1, 1},
		{"half hot", []string{"--accounts", "10000", "--hot", "0.5"}, 10_000, 0.45, 0.55},
		{"a hot set of 4", []string{"--accounts", "10000", "--hot", "1", "--hot-accounts", "4"}, 4, 1, 1},
		{"fewer accounts than the hot set", []string{"--accounts", "5", "--hot", "1"}, 5, 1, 1},
		{"two accounts", []string{"--accounts", "2"}, 2, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := lookup(t, "txn").(*txnLoad)
			flagsOf(t, w, tc.args...)
			require.NoError(t, w.Validate())
			r := newRand(1, 2)
			const draws = 10_000
			hot, seen := 0, map[int]bool{}
			for range draws {
				from, to := w.pick(r)
				require.NotEqual(t, from, to)
				require.True(t, from >= 0 && from < tc.bound && to >= 0 && to < tc.bound, "%d, %d", from, to)
				seen[from], seen[to] = true, true
				if from < 16 && to < 16 {
					hot++
				}
			}
			share := float64(hot) / draws
			assert.GreaterOrEqual(t, share, tc.wantHot)
			assert.LessOrEqual(t, share, tc.wantHotUpper)
			if tc.bound <= 16 {
				assert.Len(t, seen, tc.bound, "every account drawn")
			} else {
				assert.Greater(t, len(seen), 16, "accounts beyond the hot set")
			}
		})
	}
}

func TestTxnLoad_Validate(t *testing.T) {
	w := lookup(t, "txn").(*txnLoad)
	flagsOf(t, w)
	assert.NoError(t, w.Validate(), "the defaults")
	assert.Equal(t, [4]float64{4, 10_000, 0, 16}, [4]float64{float64(w.clients.n), float64(w.accounts), w.hot, float64(w.hotAccounts)})

	flagsOf(t, w, "--clients", "0", "--accounts", "1", "--hot", "1.5", "--hot-accounts", "1")
	assert.Equal(t, []string{
		"--clients must be at least 1, not 0",
		"--accounts must be between 2 (a transfer needs two) and 10000000, not 1",
		"--hot must be a fraction between 0 and 1, not 1.5",
		"--hot-accounts must be at least 2 (a transfer needs two), not 1",
	}, problemsOf(w.Validate()), "every problem at once")
	flagsOf(t, w, "--clients", "1", "--accounts", "10000001", "--hot", "NaN", "--hot-accounts", "2")
	assert.Equal(t, []string{
		"--accounts must be between 2 (a transfer needs two) and 10000000, not 10000001",
		"--hot must be a fraction between 0 and 1, not NaN",
	}, problemsOf(w.Validate()))
}

// problemsOf is the message of each problem that err, every problem at
// once joined (errors.Join), holds; none for nil.
func problemsOf(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, problemsOf(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

package tikv_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tikv/client-go/v2/testutils"
	ctikv "github.com/tikv/client-go/v2/tikv"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/tikv"
)

// stock is a program written against kv.Store: it does not know where
// the store runs.
func stock(ctx context.Context, s kv.Store) (string, error) {
	var out strings.Builder
	b := s.NewBatch()
	for i, fruit := range []string{"apple", "banana", "cherry", "date", "elder"} {
		row, err := coproc.EncodeRow(map[string]any{"qty": (i + 1) * 10})
		if err != nil {
			return "", err
		}
		b.Set([]byte("item/"+fruit), row)
	}
	b.Set([]byte("note"), nil) // an empty value is a value
	if err := s.Write(ctx, b); err != nil {
		return "", err
	}
	snap, err := s.NewSnapshot(ctx)
	if err != nil {
		return "", err
	}
	defer snap.Close()
	b = s.NewBatch()
	b.DeleteRange([]byte("item/a"), []byte("item/c"))
	if err := s.Write(ctx, b); err != nil {
		return "", err
	}

	it := s.Scan(ctx, []byte("item/"), kv.PrefixEnd([]byte("item/")), &kv.ScanOptions{Reverse: true, KeysOnly: true})
	var keys []string
	for k := range it.All() {
		keys = append(keys, string(k))
	}
	if err := it.Close(); err != nil {
		return "", err
	}
	v, err := s.Get(ctx, []byte("note"))
	fmt.Fprintf(&out, "%s\nnote: %q %v\n", strings.Join(keys, " "), v, err)
	_, err = s.Get(ctx, []byte("item/apple"))
	fmt.Fprintf(&out, "apple now: %v\n", err)
	sum := &coproc.Request{Ranges: []coproc.KeyRange{{Start: []byte("item/"), End: kv.PrefixEnd([]byte("item/"))}}, Aggs: []coproc.Agg{{Func: "sum", Col: "qty", As: "qty"}}}
	now, err := s.Coprocessor(ctx, sum)
	if err != nil {
		return "", err
	}
	then, err := snap.Coprocessor(ctx, sum)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&out, "qty now: %v, in the snapshot: %v\n", now.Rows[0]["qty"], then.Rows[0]["qty"])
	return out.String(), nil
}

// mockStore opens a Store on client-go's in-process mock cluster, split
// into regions at the store's keys given.
func mockStore(splits ...string) (*tikv.Store, error) {
	client, cluster, pdClient, err := testutils.NewMockTiKV("", nil)
	if err != nil {
		return nil, err
	}
	keys := make([][]byte, len(splits))
	for i, k := range splits {
		keys[i] = []byte(tikv.DefaultPrefix + k)
	}
	testutils.BootstrapWithMultiRegions(cluster, keys...)
	kvs, err := ctikv.NewTestTiKVStore(client, pdClient, nil, nil, 0)
	if err != nil {
		return nil, err
	}
	return tikv.New(kvs, nil) // the Store owns kvs
}

// The same program on the embedded store and on TiKV — here client-go's
// in-process mock cluster, split into regions; on a real cluster,
// tikv.Open(ctx, []string{"127.0.0.1:2379"}, nil).
func Example() {
	ctx := context.Background()
	// run opens a store, runs the program on it and closes the store.
	run := func(open func() (kv.Store, error)) string {
		s, err := open()
		if err != nil {
			panic(err)
		}
		defer s.Close()
		out, err := stock(ctx, s)
		if err != nil {
			panic(err)
		}
		return out
	}
	embedded := run(func() (kv.Store, error) { return kv.Open("", &kv.Options{InMemory: true}) })
	onTiKV := run(func() (kv.Store, error) { return mockStore("item/b", "item/d", "n") })

	fmt.Print(onTiKV)
	fmt.Println("the same on both:", embedded == onTiKV)
	// Output:
	// item/elder item/date item/cherry
	// note: "" <nil>
	// apple now: kv: not found
	// qty now: 120, in the snapshot: 150
	// the same on both: true
}

// A transfer between two accounts with kv.Update, on client-go's mock
// cluster: Update runs the function in a Txn and, should anyone have
// written either balance since it began, runs it again on a fresh one. The balances it read are locked into the commit's conflict check,
// so the overdraft test holds when the transfer commits.
func ExampleStore_NewTxn() {
	ctx := context.Background()
	s, err := mockStore("acct/bob") // the accounts in two regions
	if err != nil {
		panic(err)
	}
	defer s.Close()

	b := s.NewBatch()
	b.Set([]byte("acct/ann"), []byte("100"))
	b.Set([]byte("acct/bob"), []byte("20"))
	if err := s.Write(ctx, b); err != nil {
		panic(err)
	}
	transfer := func(from, to string, amount int) error {
		return kv.Update(ctx, s, func(tx *kv.Txn) error {
			vals, err := tx.MultiGet(ctx, [][]byte{[]byte(from), []byte(to)})
			if err != nil {
				return err
			}
			f, _ := strconv.Atoi(string(vals[0]))
			t, _ := strconv.Atoi(string(vals[1]))
			if f < amount {
				return fmt.Errorf("%s has %d, cannot send %d", from, f, amount)
			}
			if err := tx.Set([]byte(from), []byte(strconv.Itoa(f-amount))); err != nil {
				return err
			}
			return tx.Set([]byte(to), []byte(strconv.Itoa(t+amount)))
		})
	}
	fmt.Println(transfer("acct/ann", "acct/bob", 30))
	fmt.Println(transfer("acct/bob", "acct/ann", 80))

	it := s.Scan(ctx, []byte("acct/"), kv.PrefixEnd([]byte("acct/")), nil)
	for k, v := range it.All() {
		fmt.Printf("%s %s\n", k, v)
	}
	if err := it.Close(); err != nil {
		panic(err)
	}
	// Output:
	// <nil>
	// acct/bob has 50, cannot send 80
	// acct/ann 70
	// acct/bob 50
}

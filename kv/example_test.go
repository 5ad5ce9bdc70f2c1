package kv_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

func ExampleOpen() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if err := db.Set([]byte("hello"), []byte("world")); err != nil {
		panic(err)
	}
	v, err := db.Get(context.Background(), []byte("hello"))
	fmt.Println(string(v), err)
	_, err = db.Get(context.Background(), []byte("missing"))
	fmt.Println(err)
	// Output:
	// world <nil>
	// kv: not found
}

func ExampleDB_Scan() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	b := db.NewBatch()
	for _, k := range []string{"a", "b", "c", "d"} {
		b.Set([]byte(k), []byte("v-"+k))
	}
	if err := db.Apply(b); err != nil {
		panic(err)
	}
	it := db.Scan(context.Background(), []byte("b"), nil, &kv.ScanOptions{Reverse: true})
	defer it.Close()
	for k, v := range it.All() {
		fmt.Printf("%s=%s\n", k, v)
	}
	fmt.Println(it.Err())
	// Output:
	// d=v-d
	// c=v-c
	// b=v-b
	// <nil>
}

func ExampleDB_Coprocessor() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	for i, r := range []string{"north", "south", "north", "east", "north"} {
		row, err := coproc.EncodeRow(map[string]any{"region": r, "amount": (i + 1) * 10})
		if err != nil {
			panic(err)
		}
		if err := db.Set(fmt.Appendf(nil, "sale/%02d", i), row); err != nil {
			panic(err)
		}
	}
	resp, err := db.Coprocessor(context.Background(), &coproc.Request{
		Ranges:  []coproc.KeyRange{{Start: []byte("sale/"), End: []byte("sale0")}},
		Filter:  &coproc.Expr{Op: "ge", Args: []*coproc.Expr{{Op: "col", Col: "amount"}, {Op: "const", Value: 20}}},
		GroupBy: []string{"region"},
		Aggs:    []coproc.Agg{{Func: "count", As: "n"}, {Func: "sum", Col: "amount", As: "total"}},
		OrderBy: []coproc.Order{{Col: "total", Desc: true}},
		Limit:   10,
	})
	if err != nil {
		panic(err)
	}
	for _, r := range resp.Rows {
		fmt.Println(r["region"], r["n"], r["total"])
	}
	// Output:
	// north 2 80
	// east 1 40
	// south 1 20
}

func ExampleDB_ResourceGroups() {
	db, err := kv.Open("", &kv.Options{InMemory: true, ResourceControl: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	if err := db.ResourceGroups().Put(resource.GroupConfig{Name: "batch", RUPerSec: 500, Priority: resource.PriorityLow}); err != nil {
		panic(err)
	}
	if err := db.Set([]byte("k"), []byte("v")); err != nil {
		panic(err)
	}
	v, err := db.Get(kv.WithResourceGroup(context.Background(), "batch"), []byte("k"))
	fmt.Println(string(v), err)
	for _, g := range db.Stats().Groups {
		fmt.Println(g.Name, g.RU > 0)
	}
	// Output:
	// v <nil>
	// batch true
	// default false
}

func ExamplePrefixEnd() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	for _, k := range []string{"user/1", "user/2", "user0", "users"} {
		if err := db.Set([]byte(k), nil); err != nil {
			panic(err)
		}
	}
	prefix := []byte("user/")
	it := db.Scan(context.Background(), prefix, kv.PrefixEnd(prefix), &kv.ScanOptions{KeysOnly: true})
	defer it.Close()
	for k := range it.All() {
		fmt.Println(string(k))
	}
	// Output:
	// user/1
	// user/2
}

func ExampleDB_Write() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, k := range []string{"session/a", "session/b", "user/1"} {
		if err := db.Set([]byte(k), []byte("old")); err != nil {
			panic(err)
		}
	}
	// One atomic batch: all of it or none.
	b := db.NewBatch()
	b.DeleteRange([]byte("session/"), kv.PrefixEnd([]byte("session/")))
	b.Set([]byte("user/1"), []byte("new"))
	if err := db.Write(ctx, b); err != nil {
		panic(err)
	}
	vals, err := db.MultiGet(ctx, [][]byte{[]byte("session/a"), []byte("user/1")})
	fmt.Printf("%q %q %v\n", vals[0], vals[1], err)
	// Output:
	// "" "new" <nil>
}

func ExampleDB_NewSnapshot() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	_ = db.Set([]byte("from"), []byte("100"))
	_ = db.Set([]byte("to"), []byte("0"))

	snap, err := db.NewSnapshot(ctx)
	if err != nil {
		panic(err)
	}
	defer snap.Close()
	// A transfer after the snapshot: the snapshot's two reads still agree.
	b := db.NewBatch()
	b.Set([]byte("from"), []byte("60"))
	b.Set([]byte("to"), []byte("40"))
	if err := db.Write(ctx, b); err != nil {
		panic(err)
	}
	from, _ := snap.Get(ctx, []byte("from"))
	to, _ := snap.Get(ctx, []byte("to"))
	fmt.Printf("snapshot: from=%s to=%s\n", from, to)
	now, _ := db.MultiGet(ctx, [][]byte{[]byte("from"), []byte("to")})
	fmt.Printf("now: from=%s to=%s\n", now[0], now[1])
	// Output:
	// snapshot: from=100 to=0
	// now: from=60 to=40
}

func ExampleDB_MultiGet() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	_ = db.Set([]byte("a"), []byte("1"))
	_ = db.Set([]byte("empty"), []byte{})
	vals, err := db.MultiGet(context.Background(), [][]byte{[]byte("a"), []byte("missing"), []byte("empty"), []byte("a")})
	for _, v := range vals {
		fmt.Printf("%q nil=%v\n", v, v == nil)
	}
	fmt.Println(err)
	// Output:
	// "1" nil=false
	// "" nil=true
	// "" nil=false
	// "1" nil=false
	// <nil>
}

func ExampleCoprocessorPages() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	for i := range 10 {
		row, err := coproc.EncodeRow(map[string]any{"n": i})
		if err != nil {
			panic(err)
		}
		if err := db.Set(fmt.Appendf(nil, "row/%02d", i), row); err != nil {
			panic(err)
		}
	}
	// Three rows scanned a page, seven rows in all: the last page is sent
	// with the one row left of the Limit.
	req := &coproc.Request{Ranges: []coproc.KeyRange{{}}, Columns: []string{"n"}, PagingSize: 3, Limit: 7}
	for resp, err := range kv.CoprocessorPages(context.Background(), db, req) {
		if err != nil {
			panic(err)
		}
		var ns []any
		for _, r := range resp.Rows {
			ns = append(ns, r["n"])
		}
		fmt.Println(ns, "more:", resp.ResumeKey != nil)
	}
	// Output:
	// [0 1 2] more: true
	// [3 4 5] more: true
	// [6] more: false
}

// ExampleUpdate moves money between two accounts in a transaction: read
// both balances, refuse an overdraft, write both. Update runs the function
// again if another writer changed either balance meanwhile, so no
// transfer is lost and no lock is needed.
func ExampleUpdate() {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()
	_ = db.Set([]byte("acct/alice"), []byte("100"))
	_ = db.Set([]byte("acct/bob"), []byte("0"))

	errOverdraft := errors.New("insufficient funds")
	transfer := func(from, to string, amount int) error {
		return kv.Update(ctx, db, func(tx *kv.Txn) error {
			vals, err := tx.MultiGet(ctx, [][]byte{[]byte(from), []byte(to)})
			if err != nil {
				return err
			}
			a, _ := strconv.Atoi(string(vals[0]))
			b, _ := strconv.Atoi(string(vals[1]))
			if a < amount {
				return errOverdraft // rolls back; Update returns it as it is
			}
			if err := tx.Set([]byte(from), strconv.AppendInt(nil, int64(a-amount), 10)); err != nil {
				return err
			}
			return tx.Set([]byte(to), strconv.AppendInt(nil, int64(b+amount), 10))
		})
	}
	fmt.Println(transfer("acct/alice", "acct/bob", 30))
	fmt.Println(transfer("acct/alice", "acct/bob", 80))
	vals, _ := db.MultiGet(ctx, [][]byte{[]byte("acct/alice"), []byte("acct/bob")})
	fmt.Printf("alice=%s bob=%s\n", vals[0], vals[1])
	// Output:
	// <nil>
	// insufficient funds
	// alice=70 bob=30
}

// A login session that expires: it reads as missing from its TTL on, in
// every read, and the store deletes it in the background. The store's
// clock (Options.Clock) is moved on here instead of waiting; atomic, as
// the sweeper reads it too.
func ExampleDB_SetWithTTL() {
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC).UnixNano())
	db, err := kv.Open("", &kv.Options{InMemory: true, Clock: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	ctx := context.Background()

	if err := db.SetWithTTL([]byte("session/4f2a"), []byte("user=ada"), 30*time.Minute); err != nil {
		panic(err)
	}
	exp, _ := db.ExpiresAt(ctx, []byte("session/4f2a"))
	fmt.Println("expires at", exp.UTC().Format(time.Kitchen))

	now.Add(int64(29 * time.Minute))
	v, err := db.Get(ctx, []byte("session/4f2a"))
	fmt.Printf("after 29m: %s %v\n", v, err)

	now.Add(int64(time.Minute))
	_, err = db.Get(ctx, []byte("session/4f2a"))
	fmt.Println("after 30m:", err)
	// Output:
	// expires at 9:30AM
	// after 29m: user=ada <nil>
	// after 30m: kv: not found
}

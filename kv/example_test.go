package kv_test

import (
	"context"
	"fmt"

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

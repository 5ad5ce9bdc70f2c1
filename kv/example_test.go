package kv_test

import (
	"context"
	"fmt"

	"github.com/coopkv/coopkv/kv"
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

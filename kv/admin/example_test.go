package admin_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/admin"
)

// ExampleHandler mounts a store's admin handler under /debug/kv/ of the
// program's own mux and changes a resource group through it, as kvctl
// groups set does.
func ExampleHandler() {
	db, err := kv.Open("", &kv.Options{InMemory: true, ResourceControl: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	mux := http.NewServeMux()
	mux.Handle("/debug/kv/", http.StripPrefix("/debug/kv", admin.Handler(db)))
	srv := httptest.NewServer(mux) // a program would use its own server, on loopback
	defer srv.Close()

	req, err := http.NewRequest(http.MethodPut, srv.URL+"/debug/kv/groups/batch",
		strings.NewReader(`{"ru_per_sec": 500, "priority": "low"}`))
	if err != nil {
		panic(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	fmt.Print(string(body)) // the config in force

	cfg, ok := db.ResourceGroups().Get("batch")
	fmt.Println(ok, cfg.RUPerSec, cfg.Priority)
	// Output:
	// 200
	// {
	//   "name": "batch",
	//   "ru_per_sec": 500,
	//   "burstable": false,
	//   "priority": "low"
	// }
	// true 500 low
}

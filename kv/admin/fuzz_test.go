package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// The seed corpora live in testdata/fuzz/<FuzzName>/ and run with every
// plain go test; crashers the fuzzer finds land there too. Fuzz with
//
//	go test -run '^$' -fuzz FuzzPutGroup ./kv/admin/
//
// Each fuzz worker opens one in-memory store (Handler serves its groups)
// and puts the groups back as they were after every input.

// fuzzStore opens an in-memory store for a fuzz target, closed when it
// ends.
func fuzzStore(f *testing.F) *kv.DB {
	f.Helper()
	db, err := kv.Open("", &kv.Options{InMemory: true, ResourceControl: true})
	require.NoError(f, err)
	f.Cleanup(func() { require.NoError(f, db.Close()) })
	return db
}

// serve sends one request to h. The path is set after the request is
// built, so that any string may be one (httptest.NewRequest would parse,
// and refuse, it).
func serve(h http.Handler, method, path string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/", bytes.NewReader(body))
	r.Method, r.URL.Path, r.URL.RawPath = method, path, ""
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// defaultConfig is the default group's config in a new store.
var defaultConfig = resource.NewManager().Default().Config()

// resetGroups deletes every group but default, and restores default's
// config, so that one input cannot change what the next one sees.
func resetGroups(t *testing.T, db *kv.DB) {
	m := db.ResourceGroups()
	for _, g := range m.List() {
		if g.Name != resource.DefaultGroup {
			require.NoError(t, m.Delete(g.Name))
		}
	}
	require.NoError(t, m.Put(defaultConfig))
}

// wantConfig is what PUT /groups/{name} with body must answer with 200,
// or false when it must refuse: the body is one JSON GroupConfig (no
// unknown field, nothing after it, within MaxBodyBytes) whose name is
// empty or the path's, and which a manager accepts. A body of null is no
// config.
func wantConfig(name string, body []byte) (resource.GroupConfig, bool) {
	var cfg resource.GroupConfig
	if name == "" || len(body) > MaxBodyBytes {
		return cfg, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var in *resource.GroupConfig
	if dec.Decode(&in) != nil || in == nil {
		return cfg, false
	}
	cfg = *in
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return cfg, false
	}
	switch cfg.Name {
	case "":
		cfg.Name = name
	case name:
	default:
		return cfg, false
	}
	m := resource.NewManager()
	if m.Put(cfg) != nil {
		return cfg, false
	}
	cfg, _ = m.Get(cfg.Name) // with its defaults filled in
	return cfg, true
}

// checkAnswer asserts what every answer of the handler must be: no 5xx,
// and JSON (but for the metrics, which are Prometheus text).
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder, what string) {
	t.Helper()
	assert.Less(t, rec.Code, 500, "%s: %s", what, rec.Body.Bytes())
	assert.GreaterOrEqual(t, rec.Code, 200, what)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"), what)
	assert.True(t, json.Valid(rec.Body.Bytes()), "%s: not JSON: %q", what, rec.Body.Bytes())
}

// FuzzPutGroup: PUT /groups/{name} with any name and body never panics,
// never answers 5xx, always answers JSON, and answers 200 — with the
// config in force, which GET then shows — exactly when the config is
// valid; a refused PUT leaves the groups as they were.
func FuzzPutGroup(f *testing.F) {
	db := fuzzStore(f)
	h := Handler(db)
	f.Fuzz(func(t *testing.T, name string, body []byte) {
		defer resetGroups(t, db)
		path := "/groups/" + name
		rec := serve(h, http.MethodPut, path, body)
		checkAnswer(t, rec, "PUT "+path)
		want, ok := wantConfig(name, body)
		if !ok {
			assert.NotEqual(t, http.StatusOK, rec.Code, "PUT %q %q: an invalid config was accepted", path, body)
			got, exists := db.ResourceGroups().Get(name)
			if name == resource.DefaultGroup {
				assert.Equal(t, defaultConfig, got, "a refused PUT left default as it was")
			} else {
				assert.False(t, exists, "a refused PUT created %q", name)
			}
			return
		}
		if !assert.Equal(t, http.StatusOK, rec.Code, "PUT %q %q: a valid config was refused: %s", path, body, rec.Body.Bytes()) {
			return
		}
		var got resource.GroupConfig
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
		assert.Equal(t, want, got, "the answer is the config in force")
		inForce, exists := db.ResourceGroups().Get(name)
		assert.True(t, exists)
		assert.Equal(t, want, inForce)

		rec = serve(h, http.MethodGet, path, nil)
		checkAnswer(t, rec, "GET "+path)
		require.Equal(t, http.StatusOK, rec.Code, "GET %q after its PUT: %s", path, rec.Body.Bytes())
		var gs resource.GroupStats
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &gs))
		assert.Equal(t, want.Name, gs.Name)
		assert.Equal(t, want.RUPerSec, gs.RUPerSec)
		assert.Equal(t, want.Burstable, gs.Burstable)
		assert.Equal(t, want.Priority.String(), gs.Priority)
		assert.Equal(t, want.Runaway, gs.Runaway)
	})
}

// FuzzPaths: any method on any path, with any body, never panics and never
// answers 5xx; every answer but the metrics is JSON.
func FuzzPaths(f *testing.F) {
	db := fuzzStore(f)
	h := Handler(db)
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		defer resetGroups(t, db)
		rec := serve(h, method, path, body)
		what := method + " " + path
		if path == "/metrics" && rec.Code == http.StatusOK {
			assert.Contains(t, rec.Header().Get("Content-Type"), "text/plain", what)
			return
		}
		checkAnswer(t, rec, what)
	})
}

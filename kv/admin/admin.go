// Package admin serves a coopkv store's live figures and its resource
// groups over HTTP, for kvctl and for Prometheus. It is a package of its
// own so that kv imports neither net/http handlers nor Prometheus.
//
// Handler returns an http.Handler to mount wherever the program likes:
//
//	GET    /stats          DB.Stats as JSON
//	GET    /metrics        Prometheus text format, coopkv_ names
//	GET    /groups         {"resource_control": bool, "groups": [GroupStats]}
//	GET    /groups/{name}  one group's GroupStats
//	PUT    /groups/{name}  a GroupConfig as JSON; answers the config in force
//	DELETE /groups/{name}  {"deleted": name}
//
// A PUT's config may carry the group's runaway rule, e.g.
//
//	{"ru_per_sec": 500, "runaway": {"exec_elapsed_ns": 10000000,
//	  "rows_scanned": 0, "action": "kill", "watch_ns": 60000000000}}
//
// and a PUT without one removes it (a PUT replaces the whole config). A
// rule that resource.RunawayRule.Validate refuses — a negative or absurd
// value, an unknown action, no limit — is a 400 that names the field, and
// changes nothing.
//
// Every error is a 4xx with a body {"error": "..."}; bad input never gets
// a 500. A closed store still answers: /stats says "closed": true.
//
// The handler has no authentication of its own: PUT and DELETE change how
// the store schedules reads. A program that exposes it beyond loopback puts
// its own authentication in front.
package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxBodyBytes bounds a request body; a group's config is far smaller.
const MaxBodyBytes = 64 << 10

// Handler returns the admin handler of db. Its /metrics uses a registry of
// its own (not Prometheus's global one), so two stores in one process, or
// two handlers of one store, never collide.
func Handler(db *kv.DB) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(db))
	return &handler{
		db: db,
		metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			// A failed collection is reported in the body, not as a panic.
			ErrorHandling: promhttp.ContinueOnError,
		}),
	}
}

type handler struct {
	db      *kv.DB
	metrics http.Handler
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/stats":
		if allow(w, r, http.MethodGet) {
			writeJSON(w, http.StatusOK, h.db.Stats())
		}
	case path == "/metrics":
		if allow(w, r, http.MethodGet) {
			h.metrics.ServeHTTP(w, r)
		}
	case path == "/groups" || path == "/groups/":
		if allow(w, r, http.MethodGet) {
			gs := h.db.ResourceGroups().Stats()
			if gs == nil {
				gs = []resource.GroupStats{}
			}
			writeJSON(w, http.StatusOK, GroupsList{ResourceControl: h.db.Options().ResourceControl, Groups: gs})
		}
	case strings.HasPrefix(path, "/groups/"):
		h.group(w, r, strings.TrimPrefix(path, "/groups/"))
	default:
		WriteError(w, http.StatusNotFound, fmt.Sprintf("no such path %q; try /stats, /metrics or /groups", path))
	}
}

// group serves /groups/{name}.
func (h *handler) group(w http.ResponseWriter, r *http.Request, name string) {
	m := h.db.ResourceGroups()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		for _, g := range m.Stats() {
			if g.Name == name {
				writeJSON(w, http.StatusOK, g)
				return
			}
		}
		WriteError(w, http.StatusNotFound, fmt.Sprintf("no group %q", name))
	case http.MethodPut:
		cfg, err := decodeConfig(w, r, name)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than %d bytes", tooBig.Limit))
				return
			}
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		if err := m.Put(cfg); err != nil {
			code := http.StatusBadRequest
			if errors.Is(err, resource.ErrTooManyGroups) {
				code = http.StatusConflict
			}
			WriteError(w, code, err.Error())
			return
		}
		got, ok := m.Get(name)
		if !ok { // deleted between Put and Get by another request
			WriteError(w, http.StatusConflict, fmt.Sprintf("group %q was deleted while it was being set", name))
			return
		}
		writeJSON(w, http.StatusOK, got)
	case http.MethodDelete:
		switch err := m.Delete(name); {
		case err == nil:
			writeJSON(w, http.StatusOK, Deleted{Deleted: name})
		case errors.Is(err, resource.ErrNoGroup):
			WriteError(w, http.StatusNotFound, err.Error())
		case errors.Is(err, resource.ErrDefaultGroup):
			WriteError(w, http.StatusConflict, err.Error())
		default:
			WriteError(w, http.StatusBadRequest, err.Error())
		}
	default:
		methodNotAllowed(w, r, http.MethodGet, http.MethodPut, http.MethodDelete)
	}
}

// decodeConfig reads a PUT body: one GroupConfig, no unknown fields, no
// trailing data, its name (if given) the path's.
func decodeConfig(w http.ResponseWriter, r *http.Request, name string) (resource.GroupConfig, error) {
	var cfg resource.GroupConfig
	var in *resource.GroupConfig // nil for a body of null
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in == nil {
		if err == nil || errors.Is(err, io.EOF) {
			return cfg, errors.New(`empty body; want a group config such as {"ru_per_sec": 1000, "burstable": true, "priority": "medium"}`)
		}
		return cfg, fmt.Errorf("bad group config: %w", err)
	}
	cfg = *in
	if cfg.RUPerSec == 0 {
		cfg.RUPerSec = 0 // -0, which JSON allows, is unlimited too
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return cfg, err
		}
		return cfg, errors.New("bad group config: data after the JSON object")
	}
	switch {
	case cfg.Name == "":
		cfg.Name = name
	case cfg.Name != name:
		return cfg, fmt.Errorf("body names group %q but the path names %q", cfg.Name, name)
	}
	return cfg, nil
}

// allow reports whether r's method is one of methods (HEAD counts as GET),
// answering 405 if not.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m || r.Method == http.MethodHead && m == http.MethodGet {
			return true
		}
	}
	methodNotAllowed(w, r, methods...)
	return false
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, methods ...string) {
	w.Header().Set("Allow", strings.Join(methods, ", "))
	WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(methods, ", ")))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		// Only a bug in a figure's type (e.g. a NaN float) gets here.
		code = http.StatusInternalServerError
		b, _ = json.Marshal(ErrorBody{Error: "encoding the answer: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/kvtest/faultfs"
	"github.com/coopkv/coopkv/resource"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openDB opens an in-memory store with keys k000..k999, closed by the test.
func openDB(t *testing.T, opts kv.Options) *kv.DB {
	t.Helper()
	opts.InMemory = true
	db, err := kv.Open("", &opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	b := db.NewBatch()
	for i := range 1000 {
		b.Set(fmt.Appendf(nil, "k%03d", i), []byte("value"))
	}
	require.NoError(t, db.Apply(b))
	return db
}

// load runs Gets and scans until the test ends, so figures move.
func load(t *testing.T, db *kv.DB) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg, first sync.WaitGroup
	first.Add(4)
	for i := range 4 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				if i%2 == 0 {
					_, _ = db.Get(ctx, []byte("k042"))
				} else {
					it := db.Scan(ctx, nil, nil, nil)
					for range it.All() {
					}
					_ = it.Close()
				}
				if n == 0 {
					first.Done()
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	// Every reader has read once: the figures the tests look at are not
	// left to how soon the machine runs the load's goroutines.
	first.Wait()
}

type reply struct {
	code   int
	header http.Header
	body   []byte
}

func do(t *testing.T, h http.Handler, method, path, body string) reply {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, r))
	return reply{rec.Code, rec.Header(), rec.Body.Bytes()}
}

// errorOf asserts rep is a JSON error with the code and returns its text.
func errorOf(t *testing.T, rep reply, code int) string {
	t.Helper()
	assert.Equal(t, code, rep.code, "body: %s", rep.body)
	assert.Equal(t, "application/json", rep.header.Get("Content-Type"))
	var e struct{ Error string }
	require.NoError(t, json.Unmarshal(rep.body, &e), "body: %s", rep.body)
	assert.NotEmpty(t, e.Error)
	return e.Error
}

func TestStats(t *testing.T) {
	db := openDB(t, kv.Options{})
	h := Handler(db)
	_, err := db.Get(context.Background(), []byte("k001"))
	require.NoError(t, err)

	rep := do(t, h, http.MethodGet, "/stats", "")
	require.Equal(t, http.StatusOK, rep.code)
	assert.Equal(t, "application/json", rep.header.Get("Content-Type"))
	var s kv.Stats
	require.NoError(t, json.Unmarshal(rep.body, &s))
	assert.Equal(t, kv.SchedulerMLFQ, s.Scheduler)
	require.NotNil(t, s.Pool)
	assert.Equal(t, db.Options().Workers, s.Pool.Workers)
	assert.GreaterOrEqual(t, s.Pool.Completed, int64(1))
	assert.Equal(t, "mlfq", s.Pool.Queue.Kind)
	assert.NotEmpty(t, s.Pool.QueueWait.Buckets)
	assert.NotEmpty(t, s.Storage.Levels)

	errorOf(t, do(t, h, http.MethodPost, "/stats", "{}"), http.StatusMethodNotAllowed)
	assert.Equal(t, http.StatusOK, do(t, h, http.MethodHead, "/stats", "").code)
}

func TestStats_ClosedStore(t *testing.T) {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	rep := do(t, Handler(db), http.MethodGet, "/stats", "")
	require.Equal(t, http.StatusOK, rep.code)
	var s kv.Stats
	require.NoError(t, json.Unmarshal(rep.body, &s))
	assert.True(t, s.Closed)
	assert.Equal(t, http.StatusOK, do(t, Handler(db), http.MethodGet, "/metrics", "").code)
}

func TestUnknownPathAndMethods(t *testing.T) {
	h := Handler(openDB(t, kv.Options{}))
	assert.Contains(t, errorOf(t, do(t, h, http.MethodGet, "/nope", ""), http.StatusNotFound), "/nope")
	rep := do(t, h, http.MethodPatch, "/groups/g", "{}")
	errorOf(t, rep, http.StatusMethodNotAllowed)
	assert.Equal(t, "GET, PUT, DELETE", rep.header.Get("Allow"))
	rep = do(t, h, http.MethodDelete, "/groups", "")
	errorOf(t, rep, http.StatusMethodNotAllowed)
	assert.Equal(t, "GET", rep.header.Get("Allow"))
	errorOf(t, do(t, h, http.MethodPut, "/metrics", ""), http.StatusMethodNotAllowed)
}

func TestGroups_PutGetDelete(t *testing.T) {
	db := openDB(t, kv.Options{ResourceControl: true})
	h := Handler(db)

	rep := do(t, h, http.MethodPut, "/groups/batch", `{"ru_per_sec": 300, "burstable": true, "priority": "low"}`)
	require.Equal(t, http.StatusOK, rep.code, "body: %s", rep.body)
	var cfg resource.GroupConfig
	require.NoError(t, json.Unmarshal(rep.body, &cfg))
	assert.Equal(t, resource.GroupConfig{Name: "batch", RUPerSec: 300, Burstable: true, Priority: resource.PriorityLow}, cfg)
	got, ok := db.ResourceGroups().Get("batch")
	require.True(t, ok)
	assert.Equal(t, cfg, got)

	// A name in the body must match the path; priority defaults to medium.
	rep = do(t, h, http.MethodPut, "/groups/oltp", `{"name": "oltp", "ru_per_sec": 50}`)
	require.Equal(t, http.StatusOK, rep.code, "body: %s", rep.body)
	require.NoError(t, json.Unmarshal(rep.body, &cfg))
	assert.Equal(t, resource.PriorityMedium, cfg.Priority)

	// Reads in the group show up in its figures.
	ctx := kv.WithResourceGroup(context.Background(), "batch")
	_, err := db.Get(ctx, []byte("k007"))
	require.NoError(t, err)

	rep = do(t, h, http.MethodGet, "/groups", "")
	require.Equal(t, http.StatusOK, rep.code)
	var list struct {
		ResourceControl bool                  `json:"resource_control"`
		Groups          []resource.GroupStats `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(rep.body, &list))
	assert.True(t, list.ResourceControl)
	names := map[string]resource.GroupStats{}
	for _, g := range list.Groups {
		names[g.Name] = g
	}
	require.Contains(t, names, "batch")
	require.Contains(t, names, "oltp")
	require.Contains(t, names, resource.DefaultGroup)
	assert.Equal(t, "low", names["batch"].Priority)
	assert.Greater(t, names["batch"].RU, 0.0)

	rep = do(t, h, http.MethodGet, "/groups/batch", "")
	require.Equal(t, http.StatusOK, rep.code)
	var one resource.GroupStats
	require.NoError(t, json.Unmarshal(rep.body, &one))
	assert.Equal(t, 300.0, one.RUPerSec)

	rep = do(t, h, http.MethodDelete, "/groups/batch", "")
	require.Equal(t, http.StatusOK, rep.code)
	assert.JSONEq(t, `{"deleted": "batch"}`, string(rep.body))
	_, ok = db.ResourceGroups().Get("batch")
	assert.False(t, ok)

	assert.Contains(t, errorOf(t, do(t, h, http.MethodDelete, "/groups/batch", ""), http.StatusNotFound), "batch")
	errorOf(t, do(t, h, http.MethodGet, "/groups/batch", ""), http.StatusNotFound)
	assert.Contains(t, errorOf(t, do(t, h, http.MethodDelete, "/groups/default", ""), http.StatusConflict), "default")
}

func TestGroups_WithoutResourceControl(t *testing.T) {
	h := Handler(openDB(t, kv.Options{}))
	rep := do(t, h, http.MethodGet, "/groups", "")
	require.Equal(t, http.StatusOK, rep.code)
	assert.Contains(t, string(rep.body), `"resource_control": false`)
	assert.Contains(t, string(rep.body), `"name": "default"`)
}

func TestGroups_BadInput(t *testing.T) {
	db := openDB(t, kv.Options{ResourceControl: true})
	h := Handler(db)
	for _, tc := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"unknown field", "/groups/g", `{"ru_per_sec": 1, "weight": 2}`, 400, "weight"},
		{"negative RU", "/groups/g", `{"ru_per_sec": -5}`, 400, "RUPerSec"},
		{"huge RU", "/groups/g", `{"ru_per_sec": 1e300}`, 400, "RUPerSec"},
		{"bad priority name", "/groups/g", `{"priority": "urgent"}`, 400, "urgent"},
		{"bad priority number", "/groups/g", `{"priority": 3}`, 400, "riority"},
		{"wrong type", "/groups/g", `{"ru_per_sec": "lots"}`, 400, "ru_per_sec"},
		{"not JSON", "/groups/g", `ru=5`, 400, "bad group config"},
		{"empty body", "/groups/g", ``, 400, "empty body"},
		{"null", "/groups/g", `null`, 400, "empty body"},
		{"two objects", "/groups/g", `{"ru_per_sec": 1} {"ru_per_sec": 2}`, 400, "after the JSON object"},
		{"array", "/groups/g", `[1]`, 400, "bad group config"},
		{"name mismatch", "/groups/g", `{"name": "h"}`, 400, `"h"`},
		{"empty name", "/groups/", `{"ru_per_sec": 1}`, 405, "PUT"},
		{"unprintable name", "/groups/a%01b", `{}`, 400, "printable"},
		{"long name", "/groups/" + strings.Repeat("x", resource.MaxNameLen+1), `{}`, 400, "Name"},
		{"too big", "/groups/g", `{"name": "` + strings.Repeat("g", MaxBodyBytes) + `"}`, 413, "larger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := errorOf(t, do(t, h, http.MethodPut, tc.path, tc.body), tc.code)
			assert.Contains(t, msg, tc.want)
		})
	}
	_, ok := db.ResourceGroups().Get("g")
	assert.False(t, ok, "no bad request may create a group")
}

func TestMetrics_ParseUnderLoad(t *testing.T) {
	db := openDB(t, kv.Options{ResourceControl: true, RowCacheSize: 1 << 20})
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "batch", RUPerSec: 100, Burstable: true}))
	load(t, db)
	_, err := db.Get(kv.WithResourceGroup(context.Background(), "batch"), []byte("k001"))
	require.NoError(t, err)
	h := Handler(db)

	rep := do(t, h, http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, rep.code)
	assert.Contains(t, rep.header.Get("Content-Type"), "text/plain")
	fams, err := parseMetrics(rep.body)
	require.NoError(t, err, "metrics must parse:\n%s", rep.body)

	for name, typ := range map[string]dto.MetricType{
		"coopkv_pool_workers":                  dto.MetricType_GAUGE,
		"coopkv_pool_busy_workers":             dto.MetricType_GAUGE,
		"coopkv_pool_extra_workers":            dto.MetricType_GAUGE,
		"coopkv_pool_tasks_total":              dto.MetricType_COUNTER,
		"coopkv_pool_steps_total":              dto.MetricType_COUNTER,
		"coopkv_pool_caller_handoffs_total":    dto.MetricType_COUNTER,
		"coopkv_pool_steps_here_total":         dto.MetricType_COUNTER,
		"coopkv_pool_level_queued_tasks":       dto.MetricType_GAUGE,
		"coopkv_pool_level_step_seconds_total": dto.MetricType_COUNTER,
		"coopkv_pool_queue_wait_seconds":       dto.MetricType_HISTOGRAM,
		"coopkv_pool_step_duration_seconds":    dto.MetricType_HISTOGRAM,
		"coopkv_group_ru_total":                dto.MetricType_COUNTER,
		"coopkv_group_throttled_seconds_total": dto.MetricType_COUNTER,
		"coopkv_row_cache_hits_total":          dto.MetricType_COUNTER,
		"coopkv_row_cache_misses_total":        dto.MetricType_COUNTER,
		"coopkv_row_cache_held_back_total":     dto.MetricType_COUNTER,
		"coopkv_storage_disk_bytes":            dto.MetricType_GAUGE,
		"coopkv_failed":                        dto.MetricType_GAUGE,
		"coopkv_disk_full":                     dto.MetricType_GAUGE,
	} {
		f, ok := fams[name]
		if assert.True(t, ok, "missing %s", name) {
			assert.Equal(t, typ, f.GetType(), name)
		}
	}
	assert.Equal(t, float64(db.Options().Workers), fams["coopkv_pool_workers"].Metric[0].GetGauge().GetValue())
	assert.Equal(t, float64(db.Stats().RowCache.HeldBack), fams["coopkv_row_cache_held_back_total"].Metric[0].GetCounter().GetValue())

	// The step histogram is a real one: cumulative buckets in seconds, a
	// count no smaller than any bucket, a positive sum.
	hm := fams["coopkv_pool_step_duration_seconds"].Metric[0].GetHistogram()
	require.NotEmpty(t, hm.Bucket)
	assert.Greater(t, hm.GetSampleCount(), uint64(0))
	assert.Greater(t, hm.GetSampleSum(), 0.0)
	assert.InDelta(t, 1024e-9, hm.Bucket[0].GetUpperBound(), 1e-12)
	prev := uint64(0)
	for _, b := range hm.Bucket {
		assert.GreaterOrEqual(t, b.GetCumulativeCount(), prev)
		prev = b.GetCumulativeCount()
	}
	assert.LessOrEqual(t, prev, hm.GetSampleCount())

	groups := map[string]float64{}
	for _, m := range fams["coopkv_group_ru_total"].Metric {
		groups[m.Label[0].GetValue()] = m.GetCounter().GetValue()
	}
	assert.Greater(t, groups["batch"], 0.0)
	assert.Greater(t, groups["default"], 0.0, "the load runs in the default group")

	outcomes := map[string]float64{}
	for _, m := range fams["coopkv_pool_tasks_total"].Metric {
		outcomes[m.Label[0].GetValue()] = m.GetCounter().GetValue()
	}
	assert.Greater(t, outcomes["completed"], 0.0)
	for _, o := range []string{"spawned", "inline", "cancelled", "dropped", "panicked", "rejected_busy", "bypassed"} {
		assert.Contains(t, outcomes, o)
	}
}

func TestMetrics_DirectHasNoPool(t *testing.T) {
	rep := do(t, Handler(openDB(t, kv.Options{Scheduler: kv.SchedulerDirect})), http.MethodGet, "/metrics", "")
	require.Equal(t, http.StatusOK, rep.code)
	fams, err := parseMetrics(rep.body)
	require.NoError(t, err)
	assert.NotContains(t, fams, "coopkv_pool_workers")
	assert.Contains(t, fams, "coopkv_storage_disk_bytes")
}

// TestMetrics_FailedStore: a store a failed WAL sync has failed says so in
// /metrics and in /stats.
func TestMetrics_FailedStore(t *testing.T) {
	inj := faultfs.SyncFaults()
	db, err := kv.Open("", &kv.Options{FS: errorfs.Wrap(vfs.NewMem(), inj), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	h := Handler(db)
	gauge := func(name string) float64 {
		fams, err := parseMetrics(do(t, h, http.MethodGet, "/metrics", "").body)
		require.NoError(t, err)
		require.Contains(t, fams, name)
		return fams[name].Metric[0].GetGauge().GetValue()
	}
	assert.Zero(t, gauge("coopkv_failed"))
	inj.On()
	require.ErrorIs(t, db.Set([]byte("k"), []byte("v")), kv.ErrFailed)
	inj.Off()
	assert.Equal(t, 1.0, gauge("coopkv_failed"))
	assert.Zero(t, gauge("coopkv_disk_full"))
	var st kv.Stats
	require.NoError(t, json.Unmarshal([]byte(do(t, h, http.MethodGet, "/stats", "").body), &st))
	assert.Contains(t, st.Failed, "injected error")
	assert.ErrorIs(t, db.Close(), kv.ErrFailed)
}

func TestTwoHandlersOneProcess(t *testing.T) {
	// Each handler has its own registry: no duplicate-registration panic.
	a, b := Handler(openDB(t, kv.Options{})), Handler(openDB(t, kv.Options{}))
	assert.Equal(t, http.StatusOK, do(t, a, http.MethodGet, "/metrics", "").code)
	assert.Equal(t, http.StatusOK, do(t, b, http.MethodGet, "/metrics", "").code)
}

func TestMountedUnderPrefix(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/admin/", http.StripPrefix("/admin", Handler(openDB(t, kv.Options{}))))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/admin/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func parseMetrics(b []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(string(b)))
}

// A group's runaway rule goes in with its PUT, is answered and shown by
// GET, and a PUT without one removes it.
func TestGroups_PutRunaway(t *testing.T) {
	db := openDB(t, kv.Options{ResourceControl: true})
	h := Handler(db)
	rule := `{"exec_elapsed_ns": 10000000, "rows_scanned": 5000, "action": "kill", "watch_ns": 60000000000}`
	rep := do(t, h, http.MethodPut, "/groups/batch", `{"ru_per_sec": 300, "runaway": `+rule+`}`)
	require.Equal(t, http.StatusOK, rep.code, "body: %s", rep.body)
	want := &resource.RunawayRule{ExecElapsed: 10 * time.Millisecond, RowsScanned: 5000, Action: resource.RunawayKill, Watch: time.Minute}
	var cfg resource.GroupConfig
	require.NoError(t, json.Unmarshal(rep.body, &cfg))
	assert.Equal(t, want, cfg.Runaway, "the answer is the config in force")
	assert.Equal(t, want, db.ResourceGroups().Resolve("batch").Runaway())

	rep = do(t, h, http.MethodGet, "/groups/batch", "")
	require.Equal(t, http.StatusOK, rep.code)
	var gs resource.GroupStats
	require.NoError(t, json.Unmarshal(rep.body, &gs))
	assert.Equal(t, want, gs.Runaway)

	// Rows only, and a null rule, which is none.
	rep = do(t, h, http.MethodPut, "/groups/batch", `{"runaway": {"rows_scanned": 10, "action": "cooldown"}}`)
	require.Equal(t, http.StatusOK, rep.code, "body: %s", rep.body)
	assert.Equal(t, &resource.RunawayRule{RowsScanned: 10, Action: resource.RunawayCooldown}, db.ResourceGroups().Resolve("batch").Runaway())
	rep = do(t, h, http.MethodPut, "/groups/batch", `{"runaway": null}`)
	require.Equal(t, http.StatusOK, rep.code, "body: %s", rep.body)
	assert.NotContains(t, string(rep.body), "runaway")
	assert.Nil(t, db.ResourceGroups().Resolve("batch").Runaway(), "removed")
}

// Hostile rules get a 400 that says what is wrong, and change nothing: no
// group is created, and an existing group keeps its rule.
func TestGroups_BadRunaway(t *testing.T) {
	db := openDB(t, kv.Options{ResourceControl: true})
	h := Handler(db)
	kept := &resource.RunawayRule{RowsScanned: 100, Action: resource.RunawayDryRun}
	require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "old", Runaway: kept}))
	for _, tc := range []struct{ name, rule, want string }{
		{"negative exec", `{"exec_elapsed_ns": -1000000, "action": "kill"}`, "ExecElapsed -1ms is negative"},
		{"negative rows", `{"rows_scanned": -5, "action": "kill"}`, "RowsScanned -5 is negative"},
		{"negative watch", `{"rows_scanned": 5, "action": "kill", "watch_ns": -1}`, "Watch -1ns is negative"},
		{"exec of ten days", `{"exec_elapsed_ns": 864000000000000, "action": "kill"}`, "ExecElapsed 240h0m0s is neither 0"},
		{"exec in ms by mistake", `{"exec_elapsed_ns": 10, "action": "kill"}`, "ExecElapsed 10ns is neither 0"},
		{"absurd rows", `{"rows_scanned": 9223372036854775807, "action": "kill"}`, "RowsScanned 9223372036854775807 is more than"},
		{"rows past int64", `{"rows_scanned": 1e30, "action": "kill"}`, "rows_scanned"},
		{"exec past int64", `{"exec_elapsed_ns": 99999999999999999999, "action": "kill"}`, "exec_elapsed_ns"},
		{"fractional rows", `{"rows_scanned": 1.5, "action": "kill"}`, "rows_scanned"},
		{"watch of a year", `{"rows_scanned": 5, "action": "kill", "watch_ns": 31536000000000000}`, "Watch 8760h0m0s is neither 0"},
		{"unknown action", `{"rows_scanned": 5, "action": "explode"}`, `Action "explode" is not dryrun, cooldown or kill`},
		{"no action", `{"rows_scanned": 5}`, `Action "" is not`},
		{"action not a string", `{"rows_scanned": 5, "action": 3}`, "action"},
		{"no limit", `{"action": "kill", "watch_ns": 60000000000}`, "neither ExecElapsed nor RowsScanned"},
		{"empty rule", `{}`, "neither ExecElapsed nor RowsScanned"},
		{"duration as a string", `{"exec_elapsed_ns": "10ms", "action": "kill"}`, "exec_elapsed_ns"},
		{"unknown field", `{"rows_scanned": 5, "action": "kill", "max_rows": 1}`, "max_rows"},
		{"not an object", `"kill"`, "runaway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"g", "old"} {
				msg := errorOf(t, do(t, h, http.MethodPut, "/groups/"+name, `{"runaway": `+tc.rule+`}`), http.StatusBadRequest)
				assert.Contains(t, msg, tc.want)
			}
		})
	}
	_, ok := db.ResourceGroups().Get("g")
	assert.False(t, ok, "no bad rule may create a group")
	got, _ := db.ResourceGroups().Get("old")
	assert.Equal(t, kept, got.Runaway, "no bad rule may change a group's")
}

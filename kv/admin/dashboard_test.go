package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Grafana board in dashboard/coopkv.json is what an operator imports.
// These tests keep it true to the handler: every metric a panel or a
// variable queries is one /metrics exports, used as its type allows, with
// labels and label values it has; and the JSON has the shape Grafana's
// import takes.

const boardPath = "dashboard/coopkv.json"

// pendingMetrics are metrics the board queries before the handler exports
// them (none now: issue 32's busy and runaway counters have landed); their
// panels stay empty until then. Remove an entry when its metric lands — the
// test fails once /metrics has a metric still listed here — and make the
// stores of exportedFamilies show it, so that the board's use of it is
// checked like any other's.
var pendingMetrics = map[string]family{}

// targetLabels are the labels Prometheus adds to every series it scrapes.
var targetLabels = map[string]bool{"instance": true, "job": true}

// family is a metric family as the checks see it: its type, and for each
// label the values its series have (nil: any).
type family struct {
	typ    dto.MetricType
	labels map[string]map[string]bool
}

// board is what the tests read of a dashboard.
type board struct {
	ID            *int   `json:"id"`
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Inputs        []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// promDatasource is the datasource every query names: the one Grafana's
// import asks for, through __inputs.
var promDatasource = datasource{Type: "prometheus", UID: "${DS_PROMETHEUS}"}

type panel struct {
	ID         int                       `json:"id"`
	Type       string                    `json:"type"`
	Title      string                    `json:"title"`
	GridPos    *struct{ H, W, X, Y int } `json:"gridPos"`
	Datasource *datasource               `json:"datasource"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Datasource *datasource     `json:"datasource"`
	Query      json.RawMessage `json:"query"` // a string, or {"query": "..."}
}

func readBoard(t *testing.T) ([]byte, board) {
	t.Helper()
	raw, err := os.ReadFile(boardPath)
	require.NoError(t, err)
	var b board
	require.NoError(t, json.Unmarshal(raw, &b), "%s must be JSON", boardPath)
	return raw, b
}

// panels are the board's panels, a collapsed row's included.
func (b board) panels() []panel {
	var all []panel
	for _, p := range b.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return all
}

// TestDashboard_Importable: the board has what Grafana's "Import
// dashboard" needs, and its panels tile the grid.
func TestDashboard_Importable(t *testing.T) {
	raw, b := readBoard(t)
	assert.Nil(t, b.ID, "a shared board has id null: import assigns one")
	assert.Regexp(t, `^[A-Za-z0-9_-]{1,40}$`, b.UID)
	assert.NotEmpty(t, b.Title)
	assert.GreaterOrEqual(t, b.SchemaVersion, 36, "datasources as {type, uid} objects")
	require.Len(t, b.Inputs, 1)
	assert.Equal(t, "DS_PROMETHEUS", b.Inputs[0].Name)
	assert.Equal(t, "datasource", b.Inputs[0].Type)
	assert.Equal(t, "prometheus", b.Inputs[0].PluginID)
	for _, ref := range regexp.MustCompile(`\$\{DS_[A-Za-z0-9_]*\}`).FindAll(raw, -1) {
		assert.Equal(t, "${DS_PROMETHEUS}", string(ref), "every datasource is the one input")
	}

	ids := map[int]string{}
	var placed []panel
	for _, p := range b.panels() {
		assert.Positive(t, p.ID, p.Title)
		if other, ok := ids[p.ID]; ok {
			assert.Failf(t, "duplicate panel id", "%d: %q and %q", p.ID, other, p.Title)
		}
		ids[p.ID] = p.Title
		assert.NotEmpty(t, p.Title, "panel %d", p.ID)
		if !assert.NotNil(t, p.GridPos, p.Title) {
			continue
		}
		g := p.GridPos
		assert.True(t, g.W >= 1 && g.H >= 1 && g.X >= 0 && g.Y >= 0 && g.X+g.W <= 24, "%q: gridPos %+v", p.Title, *g)
		for _, q := range placed {
			h := q.GridPos
			if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
				assert.Failf(t, "panels overlap", "%q %+v and %q %+v", p.Title, *g, q.Title, *h)
			}
		}
		placed = append(placed, p)
		if p.Type == "row" {
			continue
		}
		assert.Equal(t, &promDatasource, p.Datasource, p.Title)
		refs := map[string]bool{}
		if assert.NotEmpty(t, p.Targets, "%q queries nothing", p.Title) {
			for _, tg := range p.Targets {
				assert.NotEmpty(t, tg.Expr, p.Title)
				assert.Equal(t, &promDatasource, tg.Datasource, p.Title)
				assert.False(t, refs[tg.RefID], "%q: refId %q twice", p.Title, tg.RefID)
				refs[tg.RefID] = true
			}
		}
	}
	for _, v := range b.Templating.List {
		if v.Type == "query" {
			assert.Equal(t, &promDatasource, v.Datasource, "variable %s", v.Name)
		}
	}
}

// TestDashboard_QueriesExportedMetrics: every metric the board queries is
// exported by the handler (or pending), as its type allows, with the
// labels and values the queries match on.
func TestDashboard_QueriesExportedMetrics(t *testing.T) {
	_, b := readBoard(t)
	fams := exportedFamilies(t)
	for name := range pendingMetrics {
		assert.NotContains(t, fams, name, "%s is exported now: remove it from pendingMetrics", name)
	}
	known := maps.Clone(fams)
	maps.Copy(known, pendingMetrics)

	queried := map[string]bool{}
	var problems []string
	checkQuery := func(where, query string) []selector {
		sels, err := selectors(query)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", where, err))
		}
		for _, s := range sels {
			queried[familyOf(s.name, known)] = true
			if err := check(s, known); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", where, err))
			}
		}
		return sels
	}
	for _, p := range b.panels() {
		if p.Type == "row" {
			continue
		}
		n := 0
		for _, tg := range p.Targets {
			n += len(checkQuery(fmt.Sprintf("panel %q %s", p.Title, tg.RefID), tg.Expr))
		}
		assert.Positive(t, n, "panel %q queries no metric", p.Title)
	}
	for _, v := range b.Templating.List {
		if v.Type != "query" {
			continue
		}
		query, label := labelValues(t, v)
		for _, s := range checkQuery("variable "+v.Name, query) {
			if f, ok := known[familyOf(s.name, known)]; ok && !targetLabels[label] {
				assert.Contains(t, f.labels, label, "variable %s: label_values of %s by a label it lacks", v.Name, s.name)
			}
		}
	}
	assert.Empty(t, problems, "the board queries what /metrics does not export")
	for name := range pendingMetrics {
		assert.True(t, queried[name], "pending %s is on no panel: remove it from pendingMetrics", name)
	}
	t.Logf("the board queries %d metrics: %s", len(queried), strings.Join(slices.Sorted(maps.Keys(queried)), " "))
}

// TestDashboard_ShowsEveryMetric: a metric the handler exports is on the
// board, so that a new one is not left off it.
func TestDashboard_ShowsEveryMetric(t *testing.T) {
	_, b := readBoard(t)
	fams := exportedFamilies(t)
	queried := map[string]bool{}
	for _, p := range b.panels() {
		for _, tg := range p.Targets {
			sels, err := selectors(tg.Expr)
			require.NoError(t, err)
			for _, s := range sels {
				queried[familyOf(s.name, fams)] = true
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		assert.True(t, queried[name], "%s is on no panel of %s", name, boardPath)
	}
}

// labelValues reads a query variable's label_values(query, label).
func labelValues(t *testing.T, v variable) (query, label string) {
	t.Helper()
	var q string
	if json.Unmarshal(v.Query, &q) != nil {
		var obj struct{ Query string }
		require.NoError(t, json.Unmarshal(v.Query, &obj), "variable %s", v.Name)
		q = obj.Query
	}
	args, ok := strings.CutPrefix(q, "label_values(")
	args, ok2 := strings.CutSuffix(args, ")")
	i := strings.LastIndexByte(args, ',')
	require.True(t, ok && ok2 && i > 0, "variable %s: want label_values(query, label), not %q", v.Name, q)
	return args[:i], strings.TrimSpace(args[i+1:])
}

// familyOf is the family a series name belongs to: a histogram's for its
// _bucket, _sum and _count.
func familyOf(name string, fams map[string]family) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if f, exists := fams[base]; ok && exists && f.typ == dto.MetricType_HISTOGRAM {
			return base
		}
	}
	return name
}

// check says what is wrong with a selector of the board, given the metric
// families there are; nil if nothing.
func check(s selector, fams map[string]family) error {
	name := familyOf(s.name, fams)
	f, ok := fams[name]
	if !ok {
		return fmt.Errorf("%s is not a metric /metrics exports", s.name)
	}
	part := strings.TrimPrefix(s.name, name) // _bucket, _sum, _count of a histogram
	inner := s.innermost()
	switch {
	case f.typ == dto.MetricType_HISTOGRAM && part == "":
		return fmt.Errorf("%s is a histogram: select its _bucket, _sum or _count", s.name)
	case slices.Contains(s.within, "histogram_quantile") && part != "_bucket":
		return fmt.Errorf("histogram_quantile over %s, not the _bucket of a histogram", s.name)
	case (inner == "rate" || inner == "irate" || inner == "increase" || inner == "resets") &&
		f.typ != dto.MetricType_COUNTER && part == "":
		return fmt.Errorf("%s(%s): a %s, not a counter", inner, s.name, strings.ToLower(f.typ.String()))
	}
	for _, m := range s.matchers {
		values, ok := f.labels[m.label]
		switch {
		case targetLabels[m.label] || m.label == "le" && part == "_bucket":
		case !ok:
			return fmt.Errorf("%s has no label %s", s.name, m.label)
		case m.op == "=" && values != nil && !strings.Contains(m.value, "$") && !values[m.value]:
			return fmt.Errorf("%s{%s=%q}: no series has that value (they have %v)", s.name, m.label, m.value, slices.Sorted(maps.Keys(values)))
		}
	}
	return nil
}

// exportedFamilies scrapes the handler of two stores, one scheduled by
// MLFQ, one by resource group, after a few writes and reads: between them,
// every family the collector exports.
func exportedFamilies(t *testing.T) map[string]family {
	t.Helper()
	fams := map[string]family{}
	for _, opts := range []kv.Options{{Workers: 2}, {Workers: 2, ResourceControl: true}} {
		db := openDB(t, opts)
		ctx := context.Background()
		if opts.ResourceControl {
			require.NoError(t, db.ResourceGroups().Put(resource.GroupConfig{Name: "batch", RUPerSec: 1000}))
			ctx = kv.WithResourceGroup(ctx, "batch")
		}
		require.NoError(t, db.Flush())
		for range 2 { // a row-cache miss, then a hit
			_, err := db.Get(ctx, []byte("k042"))
			require.NoError(t, err)
		}
		it := db.Scan(ctx, nil, nil, nil)
		for range it.All() {
		}
		require.NoError(t, it.Close())

		for name, mf := range scrape(t, Handler(db)) {
			f, ok := fams[name]
			if !ok {
				f = family{typ: mf.GetType(), labels: map[string]map[string]bool{}}
				fams[name] = f
			}
			require.Equal(t, f.typ, mf.GetType(), name)
			for _, m := range mf.Metric {
				for _, lp := range m.Label {
					if f.labels[lp.GetName()] == nil {
						f.labels[lp.GetName()] = map[string]bool{}
					}
					f.labels[lp.GetName()][lp.GetValue()] = true
				}
			}
		}
	}
	return fams
}

// TestCheck: the checks catch what would leave a panel empty or wrong.
func TestCheck(t *testing.T) {
	fams := map[string]family{
		"c_total": {typ: dto.MetricType_COUNTER, labels: map[string]map[string]bool{"outcome": {"completed": true}}},
		"g":       {typ: dto.MetricType_GAUGE},
		"h":       {typ: dto.MetricType_HISTOGRAM},
	}
	for _, tc := range []struct{ query, err string }{
		{query: `sum(rate(c_total{outcome="completed", instance=~"$instance"}[5m]))`},
		{query: `histogram_quantile(0.99, sum by (le) (rate(h_bucket{le!="+Inf"}[5m])))`},
		{query: `rate(h_sum[5m]) / rate(h_count[5m]) + g`},
		{query: `sum(rate(c_totl[5m]))`, err: "c_totl is not a metric"},
		{query: `rate(g[5m])`, err: "rate(g): a gauge, not a counter"},
		{query: `histogram_quantile(0.99, rate(c_total[5m]))`, err: "histogram_quantile over c_total"},
		{query: `h`, err: "h is a histogram"},
		{query: `g_bucket`, err: "g_bucket is not a metric"},
		{query: `c_total{group="a"}`, err: "c_total has no label group"},
		{query: `c_total{outcome="complete"}`, err: `no series has that value (they have [completed])`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			sels, err := selectors(tc.query)
			require.NoError(t, err)
			var errs []error
			for _, s := range sels {
				if err := check(s, fams); err != nil {
					errs = append(errs, err)
				}
			}
			if tc.err == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Contains(t, errs[0].Error(), tc.err)
		})
	}
}

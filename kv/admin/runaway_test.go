package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// labelled is the value of the series of family name whose labels include
// want.
func labelled(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "missing %s", name)
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		if f.GetType() == dto.MetricType_COUNTER {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s has no series %v", name, want)
	return 0
}

// A killed read and its watch show in /metrics, and a read refused for
// its estimated wait in coopkv_busy_total.
func TestMetrics_RunawayAndBusy(t *testing.T) {
	db := openDB(t, kv.Options{TimeSlice: 100 * time.Microsecond,
		Runaway: &resource.RunawayRule{RowsScanned: 10, Action: resource.RunawayKill, Watch: time.Hour}})
	h := Handler(db)
	fams := scrape(t, h)
	assert.Zero(t, labelled(t, fams, "coopkv_runaway_total", map[string]string{"group": "default", "action": "kill"}), "present before the first")

	it := db.Scan(context.Background(), nil, nil, nil)
	for it.Next() {
	}
	require.ErrorIs(t, it.Err(), kv.ErrRunaway)
	require.NoError(t, it.Close())

	fams = scrape(t, h)
	assert.Equal(t, 1.0, labelled(t, fams, "coopkv_runaway_total", map[string]string{"group": "default", "action": "kill"}))
	assert.Equal(t, 1.0, labelled(t, fams, "coopkv_runaway_watches", map[string]string{"group": "default", "action": "kill"}))
	assert.Zero(t, labelled(t, fams, "coopkv_busy_total", map[string]string{"reason": "wait"}))

	rep := do(t, h, http.MethodGet, "/stats", "")
	require.Equal(t, http.StatusOK, rep.code)
	var st kv.Stats
	require.NoError(t, json.Unmarshal(rep.body, &st))
	require.NotNil(t, st.Runaway)
	require.Len(t, st.Runaway.Groups, 1)
	assert.EqualValues(t, 1, st.Runaway.Groups[0].Kill)
	assert.Len(t, st.Runaway.Watches, 1)
}

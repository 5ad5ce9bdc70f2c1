package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The embedded workloads are YCSB's standard core workloads, and the
// flags override their sizes.
func TestPhaseProps_StandardWorkloads(t *testing.T) {
	cfg := &config{records: 123, operations: 456, threads: 7, fieldCount: 10, fieldLen: 100}
	want := map[string]map[string]string{
		"a": {"readproportion": "0.5", "updateproportion": "0.5", "requestdistribution": "zipfian"},
		"b": {"readproportion": "0.95", "updateproportion": "0.05", "requestdistribution": "zipfian"},
		"c": {"readproportion": "1", "requestdistribution": "zipfian"},
		"d": {"readproportion": "0.95", "insertproportion": "0.05", "requestdistribution": "latest"},
		"e": {"scanproportion": "0.95", "insertproportion": "0.05", "requestdistribution": "zipfian",
			"maxscanlength": "100", "scanlengthdistribution": "uniform"},
		"f": {"readproportion": "0.5", "readmodifywriteproportion": "0.5", "requestdistribution": "zipfian"},
	}
	for w, props := range want {
		p, err := phaseProps(cfg, w, true, map[string]string{"x.y": "z"}, "/m.json")
		require.NoError(t, err, w)
		for k, v := range props {
			assert.Equal(t, v, p.MustGet(k), "workload %s: %s", w, k)
		}
		for k, v := range map[string]string{
			"recordcount": "123", "operationcount": "456", "threadcount": "7", "fieldcount": "10",
			"fieldlength": "100", "readallfields": "true", "dotransactions": "true", "x.y": "z",
			"workload": "site.ycsb.workloads.CoreWorkload",
		} {
			assert.Equal(t, v, p.MustGet(k), "workload %s: %s", w, k)
		}
	}
}

func TestReadMeasurements(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.json")
	row := func(op, count, p50, p99 string) string {
		return `{"Operation":"` + op + `","Takes(s)":"2.0","Count":"` + count + `","OPS":"1.0","Avg(us)":"5","Min(us)":"1",` +
			`"Max(us)":"90","50th(us)":"` + p50 + `","90th(us)":"7","95th(us)":"8","99th(us)":"` + p99 + `","99.9th(us)":"12","99.99th(us)":"13"}`
	}
	data := "[" + row("UPDATE", "100", "4", "10") + "," + row("TOTAL", "400", "1", "1") + "," +
		row("READ_MODIFY_WRITE", "100", "9", "20") + "," + row("UPDATE_ERROR", "3", "1", "1") + "," +
		row("READ", "200", "3", "9") + "]\n"
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))

	ops, failed, err := readMeasurements(path, 2*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(3), failed)
	require.Len(t, ops, 3)
	assert.Equal(t, []string{"READ", "UPDATE", "READ_MODIFY_WRITE"}, []string{ops[0].Op, ops[1].Op, ops[2].Op})
	assert.Equal(t, opStats{Op: "UPDATE", Count: 100, Errors: 3, OpsPerSec: 50, AvgUs: 5, MinUs: 1, MaxUs: 90,
		P50Us: 4, P90Us: 7, P95Us: 8, P99Us: 10, P999Us: 12, P9999Us: 13}, ops[1])

	require.NoError(t, os.WriteFile(path, nil, 0o644))
	ops, failed, err = readMeasurements(path, time.Second)
	require.NoError(t, err, "nothing measured, nothing written")
	assert.Empty(t, ops)
	assert.Zero(t, failed)
}

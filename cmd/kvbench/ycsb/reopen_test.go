package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Every store opens again on what it holds: the records written before
// the reopen read back after it, and bolt's NoSync, set after each open,
// is set again.
func TestReopenStore_KeepsData(t *testing.T) {
	ctx := t.Context()
	record := func(i int) map[string][]byte {
		return map[string][]byte{"field0": fmt.Appendf(nil, "%d/0", i), "field1": fmt.Appendf(nil, "%d/1", i)}
	}
	key := func(i int) string { return fmt.Sprintf("user%03d", i) }
	for _, name := range storeNames() {
		t.Run(name, func(t *testing.T) {
			if raceEnabled && (name == "bolt" || name == "badger") {
				// badger v1.5.4's flush at Close writes a bloom filter
				// (bbloom's JSONMarshal) whose pointer arithmetic fails
				// checkptr, as bolt v1.3.1's does (see race_test.go).
				t.Skip("bolt v1.3.1 and badger v1.5.4 fail checkptr")
			}
			s := knownStores[name]
			dir := t.TempDir()
			cfg := &config{records: 10, operations: 10, threads: 1, fieldCount: 2, fieldLen: 4}
			p, err := phaseProps(cfg, "a", false, storeProps(s, dir, nil), filepath.Join(dir, "m.json"))
			require.NoError(t, err)
			db, err := openStore(s, p)
			require.NoError(t, err)
			for i := range 20 {
				require.NoError(t, db.Insert(ctx, "usertable", key(i), record(i)))
			}

			again, r, err := reopenStore(s, p, db)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, again.Close()) })
			assert.NotSame(t, db, again, "a new store")
			require.NotNil(t, r)
			assert.Positive(t, r.Sec())
			for i := range 20 {
				got, err := again.Read(ctx, "usertable", key(i), nil)
				if assert.NoError(t, err, "%s: %s after the reopen", name, key(i)) {
					assert.Equal(t, record(i), got, "%s: %s after the reopen", name, key(i))
				}
			}
			if name == "bolt" {
				bdb, err := boltHandle(again)
				require.NoError(t, err)
				assert.True(t, bdb.NoSync, "the store's opened hook runs at the reopen too")
			}
		})
	}
}

// The restart mode on every store, each in its own child process: each
// workload runs on a store opened again, which still holds every record
// loaded (C's uniform reads of the loaded keys all succeed), and every
// phase's timeline sums to its operations.
func TestRun_Reopen(t *testing.T) {
	if raceEnabled {
		t.Skip("go-ycsb v1.0.3 and bolt v1.3.1 are not race-clean (see race_test.go)")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "ycsb.json")
	stores := storeNames()
	// Uniform keys stay within the loaded records; YCSB's zipfian
	// reaches one past them, and a read of that one fails.
	stdout, stderr, err := execute(t, "--reopen",
		"--stores", strings.Join(stores, ","), "--workloads", "c,e",
		"--records", "200", "--operations", "500", "-p", "requestdistribution=uniform",
		"--dir", dir, "--json", jsonPath, "--markdown")
	require.NoError(t, err, stderr)

	b, err := os.ReadFile(jsonPath)
	require.NoError(t, err)
	var res results
	require.NoError(t, json.Unmarshal(b, &res))
	assert.True(t, res.Reopen)
	assert.True(t, res.Timeline, "--reopen turns --timeline on")
	require.Len(t, res.Stores, len(stores))
	for _, store := range stores {
		for _, w := range []string{loadPhase, "c", "e"} {
			ps, ok := res.phase(store, w)
			require.True(t, ok, "%s %s ran", store, w)
			if w == loadPhase {
				assert.Nil(t, ps.Reopen, "%s: the load opens the store", store)
			} else if assert.NotNil(t, ps.Reopen, "%s %s", store, w) {
				assert.Positive(t, ps.Reopen.Sec(), "%s %s", store, w)
			}
			if assert.NotNil(t, ps.Timeline, "%s %s", store, w) {
				sum := ps.TailOps
				for _, v := range *ps.Timeline {
					sum += v
				}
				assert.InDelta(t, float64(ps.Operations), sum, 1e-6, "%s %s: the timeline sums to the operations", store, w)
				assert.LessOrEqual(t, ps.TailOps, float64(ps.Operations), "%s %s", store, w)
			}
		}
		c, _ := res.phase(store, "c")
		read, ok := c.op("READ")
		require.True(t, ok, "%s c: reads", store)
		assert.Equal(t, int64(500), read.Count, "%s c: every read after the reopen found its record", store)
		assert.Zero(t, read.Errors, "%s c", store)
		e, _ := res.phase(store, "e")
		scan, ok := e.op("SCAN")
		if assert.True(t, ok, "%s e: scans", store) {
			assert.Zero(t, scan.Errors, "%s e", store)
		}
	}

	assert.Contains(t, stdout, "; each store closed and opened again before each workload (--reopen).\n")
	assert.Contains(t, stdout, "\n"+reopenTitle+"\n\n| workload | "+strings.Join(stores, " | ")+" |\n")
	assert.Regexp(t, fmt.Sprintf(`\n\| C \|( [\d.]+ \([\d.]+ \+ [\d.]+\) \|){%d}\n\| E \|`, len(stores)), stdout)
	assert.Contains(t, stdout, "\n"+warmTitle+"\n\n| phase | "+strings.Join(stores, " | ")+" |\n")
	assert.Regexp(t, `\[bbolt\] reopened before c in [\d.]+ ms \(close [\d.]+ ms, open [\d.]+ ms\)\n`, stderr)
	assert.Regexp(t, `\[badger\] reopened before e in `, stderr)
}

// In one process: --timeline follows --reopen unless it is given, either
// works alone, and neither leaves a goroutine behind (the timeline's
// sampler ends with its phase; the reopened store's close ends the old
// one's).
func TestRun_ReopenInProcess(t *testing.T) {
	if raceEnabled {
		t.Skip("go-ycsb v1.0.3 is not race-clean (see race_test.go)")
	}
	before := goleak.IgnoreCurrent()
	for _, tc := range []struct {
		flags            []string
		reopen, timeline bool
	}{
		{[]string{"--reopen"}, true, true},
		{[]string{"--reopen", "--timeline=false"}, true, false},
		{[]string{"--timeline"}, false, true},
	} {
		t.Run(strings.Join(tc.flags, " "), func(t *testing.T) {
			dir := t.TempDir()
			jsonPath := filepath.Join(dir, "ycsb.json")
			_, stderr, err := execute(t, append(tc.flags, "--isolate=false",
				"--stores", "coopkv-mlfq,pebble", "--workloads", "c",
				"--records", "100", "--operations", "100", "-p", "requestdistribution=uniform",
				"--dir", dir, "--json", jsonPath)...)
			require.NoError(t, err, stderr)
			b, err := os.ReadFile(jsonPath)
			require.NoError(t, err)
			var res results
			require.NoError(t, json.Unmarshal(b, &res))
			assert.Equal(t, tc.reopen, res.Reopen)
			assert.Equal(t, tc.timeline, res.Timeline)
			require.Len(t, res.Phases, 4)
			for _, ps := range res.Phases {
				assert.Equal(t, tc.timeline, ps.Timeline != nil, "%s %s", ps.Store, ps.Workload)
				assert.Equal(t, tc.reopen && ps.Workload != loadPhase, ps.Reopen != nil, "%s %s", ps.Store, ps.Workload)
				assert.Zero(t, ps.Errors, "%s %s", ps.Store, ps.Workload)
			}
		})
	}
	goleak.VerifyNone(t, before)
}

func TestRoot_ValidateReopen(t *testing.T) {
	_, _, err := execute(t, "--reopen", "-p", "dropdata=yes")
	assert.ErrorContains(t, err, "--reopen: -p dropdata would remove each store's data")
	assert.True(t, dropsData([]string{"x=1", "dropdata = true"}))
	assert.False(t, dropsData([]string{"dropdata=false"}))
	assert.False(t, dropsData(nil))
}

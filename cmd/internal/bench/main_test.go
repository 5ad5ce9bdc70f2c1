package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/kv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testStores opens *kv.DB stores in dir, as kvbench's do, their writes
// not synced; wrap, if set, hides the *kv.DB behind what it returns.
type testStores struct {
	dir  string
	wrap func(db *kv.DB) kv.Store
}

func (s *testStores) Open(scheduler string, _ bool) (kv.Store, error) {
	db, err := kv.Open(s.dir, &kv.Options{Scheduler: kv.Scheduler(scheduler), NoSync: true})
	if err != nil || s.wrap == nil {
		return db, err
	}
	return s.wrap(db), nil
}

func (s *testStores) Close(st kv.Store) error { return st.Close() }
func (s *testStores) Describe() string        { return "in " + s.dir }
func (s *testStores) Workers() int            { return 2 }

// tinyArgs make a run CI-sized: a small store, short phases.
var tinyArgs = []string{"--keys", "2000", "--duration", "200ms", "--warmup", "50ms"}

// tinyFlags are tinyArgs' counterparts for the workloads that have them:
// short scans, few clients.
var tinyFlags = map[string][]string{
	"--scan-len": {"100"}, "--long-scan-len": {"500"}, "--scanners": {"2"}, "--clients": {"2"}, "--group-scanners": {"2"},
}

// parseRun binds cfg's and w's flags, and --schedulers, to a flag set,
// parses tinyArgs, those of tinyFlags that w has, and args, and checks
// them as a binary would.
func parseRun(t *testing.T, w Workload, args ...string) *Config {
	t.Helper()
	cfg := &Config{}
	fs := pflag.NewFlagSet(w.Name(), pflag.ContinueOnError)
	cfg.AddFlags(fs)
	fs.StringSliceVar(&cfg.Schedulers, "schedulers", []string{"mlfq", "fifo", "direct"}, "")
	w.Flags(fs)
	all := slices.Clone(tinyArgs)
	for name, v := range tinyFlags {
		if fs.Lookup(strings.TrimPrefix(name, "--")) != nil {
			all = append(all, name, v[0])
		}
	}
	require.NoError(t, fs.Parse(append(all, args...)))
	require.NoError(t, errors.Join(cfg.Validate(), w.Validate()))
	return cfg
}

// runTiny runs w (see parseRun) on stores in a temporary directory,
// writing JSON, and returns the report it wrote and what it printed to
// stdout.
func runTiny(t *testing.T, w Workload, args ...string) (*Report, string) {
	t.Helper()
	cfg := parseRun(t, w, args...)
	return runWith(t, cfg, w, &testStores{dir: t.TempDir()})
}

// runWith runs w with cfg on stores, quietly, writing JSON, and returns
// the report and what it printed to stdout.
func runWith(t *testing.T, cfg *Config, w Workload, stores Stores) (*Report, string) {
	t.Helper()
	cfg.JSONPath, cfg.Quiet = filepath.Join(t.TempDir(), "out.json"), true
	var out strings.Builder
	require.NoError(t, Run(t.Context(), cfg, w, stores, &out, io.Discard))
	b, err := os.ReadFile(cfg.JSONPath)
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	return &rep, out.String()
}

// lookup returns the workload called name, with its flags' defaults.
func lookup(t *testing.T, name string) Workload {
	t.Helper()
	for _, w := range Workloads() {
		if w.Name() == name {
			return w
		}
	}
	require.FailNow(t, fmt.Sprintf("no workload %q", name))
	return nil
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/coopkv/coopkv/kv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// result is what one kvctl run showed the user.
type result struct {
	code           int
	stdout, stderr string
}

// kvctl runs kvctl in-process with args, as main would.
func kvctl(t *testing.T, args ...string) result {
	t.Helper()
	return kvctlWith(t, t.Context(), nil, args...)
}

// kvctlWith is kvctl with a context of the test's and, unless nil, a
// writer of its own for stdout (what the result's stdout then lacks).
func kvctlWith(t *testing.T, ctx context.Context, stdout io.Writer, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	if stdout == nil {
		stdout = &out
	}
	code := run(ctx, args, stdout, &errOut)
	t.Logf("kvctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out.String(), errOut.String())
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// ok asserts the run succeeded and returns its stdout.
func (r result) ok(t *testing.T) string {
	t.Helper()
	require.Equal(t, 0, r.code, "stderr: %s", r.stderr)
	return r.stdout
}

// decode decodes one JSON document.
func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal([]byte(s), &v), "output: %s", s)
	return v
}

// decodeLines decodes JSON lines.
func decodeLines[T any](t *testing.T, s string) []T {
	t.Helper()
	var out []T
	dec := json.NewDecoder(strings.NewReader(s))
	for dec.More() {
		var v T
		require.NoError(t, dec.Decode(&v), "output: %s", s)
		out = append(out, v)
	}
	return out
}

// newStore creates a store in a temporary directory, lets fill write to
// it, and closes it. Its writes are not synced one by one: thousands of
// fsyncs would be most of the package's test time, and the store is
// closed (its files complete) before any kvctl opens it.
func newStore(t *testing.T, fill func(db *kv.DB)) string {
	t.Helper()
	dir := t.TempDir()
	db, err := kv.Open(dir, &kv.Options{NoSync: true})
	require.NoError(t, err)
	fill(db)
	require.NoError(t, db.Close())
	return dir
}

// key is the i-th key of the test stores: k00000, k00001, ...
func key(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }

func TestRun_HelpOnEveryCommand(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		n++
		assert.NotEmpty(t, c.Short, c.CommandPath())
		assert.NotEmpty(t, c.Long, c.CommandPath())
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		r := kvctl(t, args...)
		assert.Equal(t, 0, r.code, c.CommandPath())
		assert.Contains(t, r.stdout, "Usage:", c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(io.Discard, io.Discard))
	assert.Equal(t, 15, n, "kvctl, 3 live commands (groups with set, delete and watches), 8 offline commands")
}

func TestRun_UsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"nosuch"}, `unknown command "nosuch"`},
		{[]string{"get", "--dir", "x"}, "wants KEY, got 0"},
		{[]string{"get", "k"}, `required flag(s) "dir" not set`},
		{[]string{"set", "k", "--dir", "x"}, "wants KEY VALUE, got 1"},
		{[]string{"pool", "--nosuch"}, "unknown flag: --nosuch (see kvctl pool --help)"},
		{[]string{"groups", "set", "g"}, `required flag(s) "ru" not set`},
		{[]string{"groups", "set", "g", "--ru", "1", "--priority", "urgent"}, `priority "urgent" is not low, medium or high`},
		{[]string{"check", "--dir", "x", "a"}, "a range needs --rows START END"},
		{[]string{"check", "--dir", "x", "--rows", "a"}, "wants START END, got 1"},
		{[]string{"scan", "--dir", "x", "--limit", "-1"}, "--limit -1"},
		{[]string{"top", "--interval", "0s"}, "--interval 0s"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := kvctl(t, tc.args...)
			assert.Equal(t, 1, r.code)
			assert.Contains(t, r.stderr, tc.want)
			assert.True(t, strings.HasPrefix(r.stderr, "kvctl: "), r.stderr)
		})
	}
}

// --json is the Printer's choice for every command: each offline command
// prints JSON alone — one document, or a JSON line per item for scan and
// cop — and nothing on stderr, where its text would note something (delete
// of a missing key) or sum up (cop).
func TestRun_JSONFromEveryOfflineCommand(t *testing.T) {
	dir := rowStore(t)
	req := writeFile(t, "req.json", `{"ranges": [{"end": "k00100"}], "columns": ["amount"], "paging_size": 30, "limit": 40}`)
	for _, tc := range []struct {
		args []string
		n    int // JSON values printed
	}{
		{[]string{"get", "k00001"}, 1},
		{[]string{"set", "k00200", "v"}, 1},
		{[]string{"delete", "nosuch"}, 1},
		{[]string{"scan", "--limit", "3"}, 3},
		{[]string{"scan", "--limit", "3", "--keys-only"}, 3},
		{[]string{"stats"}, 1},
		{[]string{"cop", "--request", req}, 40},
		{[]string{"check"}, 1},
		{[]string{"checkpoint", "--to", filepath.Join(t.TempDir(), "cp")}, 1},
	} {
		r := kvctl(t, append(tc.args, "--dir", dir, "--json")...)
		assert.Len(t, decodeLines[any](t, r.ok(t)), tc.n, tc.args)
		assert.Empty(t, r.stderr, tc.args)
	}
}

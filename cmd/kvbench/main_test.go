package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// execute runs kvbench in-process with args and returns what it wrote to
// stdout and to stderr, and its error.
func execute(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = executeTo(t.Context(), &out, &errOut, args...)
	return out.String(), errOut.String(), err
}

// executeTo runs kvbench in-process with args and ctx (a cancelled ctx
// is Ctrl-C), writing to stdout and stderr.
func executeTo(ctx context.Context, stdout, stderr io.Writer, args ...string) error {
	cmd := newRootCmd()
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetArgs(args)
	return cmd.ExecuteContext(ctx)
}

// watchedBuffer collects what a run writes to it, from any goroutine, and
// closes seen once that holds want: a test waits on it for the run to get
// somewhere (the progress lines say where), without sleeping.
type watchedBuffer struct {
	want string
	seen chan struct{}

	mu  sync.Mutex
	buf bytes.Buffer
}

func newWatchedBuffer(want string) *watchedBuffer {
	return &watchedBuffer{want: want, seen: make(chan struct{})}
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := strings.Contains(w.buf.String(), w.want)
	n, err := w.buf.Write(p)
	if !seen && strings.Contains(w.buf.String(), w.want) {
		close(w.seen)
	}
	return n, err
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestRun_Txn runs "kvbench txn" briefly, as a user would: a transfer
// row per scheduler with its commits, conflicts, retries and failures in
// the table and the JSON, the accounts' total under the table, and its
// help naming what the row counts and the check.
func TestRun_Txn(t *testing.T) {
	rep, out := runTiny(t, tiny("txn", "--accounts", "16", "--clients", "8", "--schedulers", "mlfq,direct", "-q")...)
	assert.Equal(t, "txn", rep.Workload)
	require.Len(t, rep.Results, 2)
	for i, s := range []string{"mlfq", "direct"} {
		r := rep.Results[i]
		assert.Equal(t, [3]string{"txn", s, "transfer"}, [3]string{r.Workload, r.Scheduler, r.Class})
		assert.Positive(t, r.Ops, "%s: transfers committed", s)
		assert.Zero(t, r.Errors, "%s\n%s", s, out)
		require.NotNil(t, r.Txns, "%s: conflicts, retries and failures in the JSON", s)
		assert.Equal(t, r.Retries+r.Failures, r.Conflicts, s)
		assert.Regexp(t, `(?m)^txn +`+s+` +transfer +\d+ +\d+ +\d+ +\d+ `, out)
		assert.Contains(t, out, "txn "+s+": the 16 accounts hold 16000 = 16 × 1000 after the phase: ok\n")
	}
	assert.Regexp(t, `(?m)^workload +scheduler +class +ops/s +conflicts/s +retries +failures +p50 +p99 `, out)

	help, _, err := execute(t, "txn", "--help")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(help, "txn moves money between accounts"), help)
	for _, want := range []string{"--accounts", "--hot", "--hot-accounts", "--clients", "conflicts/s", "retries", "failures",
		"exactly --accounts × 1,000", "exit status 1"} {
		assert.Contains(t, help, want)
	}
}

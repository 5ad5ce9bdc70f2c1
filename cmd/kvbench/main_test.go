package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

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

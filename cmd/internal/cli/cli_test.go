package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"failure", errors.New("boom"), 1},
		{"SIGINT", fmt.Errorf("%w by %w during mlfq get", ErrInterrupted, SignalError{syscall.SIGINT}), 130},
		{"SIGTERM", fmt.Errorf("%w by %w", ErrInterrupted, SignalError{syscall.SIGTERM}), 143},
		{"interrupted without a signal", fmt.Errorf("%w by %w", ErrInterrupted, context.Canceled), 130},
		{"a failure that mentions a signal", fmt.Errorf("load: %w", SignalError{syscall.SIGINT}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, ExitStatus(tc.err)) })
	}
}

func TestSignalContext_SIGTERM(t *testing.T) {
	ctx, stop := SignalContext(context.Background())
	defer stop()
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	assert.Equal(t, SignalError{syscall.SIGTERM}, context.Cause(ctx))
	err := Interrupted(ctx, ctx.Err())
	assert.ErrorIs(t, err, ErrInterrupted)
	assert.Equal(t, 143, ExitStatus(err))
	assert.NoError(t, Interrupted(ctx, nil), "no error, no interruption")
}

func TestSignalContext_StopReleases(t *testing.T) {
	ctx, stop := SignalContext(context.Background())
	stop()
	assert.Error(t, ctx.Err(), "stop cancels")
	assert.NotErrorIs(t, Interrupted(ctx, ctx.Err()), ErrInterrupted, "without a signal there is no interruption")
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		":7070":          "127.0.0.1:7070",
		"localhost:7070": "localhost:7070",
		"0.0.0.0:1":      "0.0.0.0:1",
		"[::1]:80":       "[::1]:80",
	} {
		got, err := HostPort(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"7070", ":", ":x", ":70000", "host"} {
		_, err := HostPort(in)
		assert.Error(t, err, in)
	}
}

func TestSyncWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &SyncWriter{W: &buf}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = w.Write([]byte("line\n"))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 800*len("line\n"), buf.Len())
}

func TestIsTerminal(t *testing.T) {
	assert.False(t, IsTerminal(&bytes.Buffer{}), "no file descriptor")
	f, err := os.CreateTemp(t.TempDir(), "out")
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, IsTerminal(f), "a file is not a terminal")
}

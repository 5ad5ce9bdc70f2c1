// Package cli is the plumbing coopkv's commands (kvbench, kvctl and the
// ycsb runner) share, so that they behave alike: one rule for signals and
// exit statuses, a writer several goroutines may share, terminal
// detection, and how an address without a host is completed.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/mattn/go-isatty"
)

// ErrInterrupted is what a command stopped before its end fails with,
// wrapping why: a SignalError for SIGINT or SIGTERM (see Interrupted).
var ErrInterrupted = errors.New("interrupted")

// SignalError is the cause of a context SignalContext cancelled: it names
// the signal. Alone it is not an interruption — an error that merely
// mentions it (a failure while stopping) exits 1; ErrInterrupted wrapping
// it exits 128 + the signal.
type SignalError struct{ Sig os.Signal }

func (e SignalError) Error() string { return "signal " + e.Sig.String() }

// SignalContext returns a context that SIGINT or SIGTERM cancels, with a
// SignalError as its cause, and stop, which releases the signals and must
// be called. After the first signal both get their default action back,
// so that a second Ctrl-C ends at once a command that is slow to stop.
// (signal.NotifyContext's cause names the signal only in its text.)
func SignalContext(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs)
			cancel(SignalError{sig})
		case <-ctx.Done():
		case <-done:
		}
	})
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// Interrupted returns ErrInterrupted wrapping ctx's SignalError when err is
// not nil and a signal cancelled ctx, else err: a command that fails
// because Ctrl-C cancelled its work says so, rather than "context
// canceled", and exits as ExitStatus says.
func Interrupted(ctx context.Context, err error) error {
	var se SignalError
	if err != nil && errors.As(context.Cause(ctx), &se) {
		return fmt.Errorf("%w by %w", ErrInterrupted, se)
	}
	return err
}

// ExitStatus is the process exit status for a command's error: 0 for nil;
// for one matching ErrInterrupted 128 + the number of the signal it wraps,
// as shells report a process the signal ended (130 for SIGINT, 143 for
// SIGTERM; 130 when it wraps none); 1 for any other failure.
func ExitStatus(err error) int {
	var se SignalError
	switch {
	case err == nil:
		return 0
	case !errors.Is(err, ErrInterrupted):
		return 1
	case errors.As(err, &se):
		if n, ok := se.Sig.(syscall.Signal); ok {
			return 128 + int(n)
		}
	}
	return 128 + int(syscall.SIGINT)
}

// SyncWriter serialises the writes to W: a command's stderr gets lines from
// its own goroutines, a store's log from Pebble's and an HTTP server's
// errors from net/http's.
type SyncWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (s *SyncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.W.Write(p)
}

// IsTerminal reports whether w is a terminal (or a Cygwin one), where a
// command may redraw in place.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// HostPort checks "HOST:PORT" or ":PORT" and completes a missing host as
// 127.0.0.1: kvbench --admin listens there (the admin handler has no
// authentication, so ":7070" must not mean every interface) and kvctl
// --addr looks there. A host given is kept. The error says what is wrong,
// for the caller to prefix with its flag.
func HostPort(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("want HOST:PORT or :PORT: %w", err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", errors.New("want HOST:PORT or :PORT: the port must be a number from 0 to 65535")
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

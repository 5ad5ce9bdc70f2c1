package bench

import (
	"errors"
	"time"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

// ErrInterrupted is the error of a run stopped before its end: by Ctrl-C
// (SIGINT) or SIGTERM, or by its context ending otherwise. The run has
// printed what it measured by then, and written --json and --plot. The
// error wraps the context's cause too — a cli.SignalError when a signal
// stopped it — so that a binary (cli.ExitStatus) can tell SIGINT (130) from SIGTERM (143).
var ErrInterrupted = cli.ErrInterrupted

// errPhaseOver is the cause of a phase's context ending at the phase's
// deadline, as against the run's context ending (an interruption).
var errPhaseOver = errors.New("kvbench: phase over")

// interruption is how a run's steps report that the run's context ended
// during phase, the phase's progress label ("the load", "mlfq scan
// warm-up", "mlfq scan"). Run prints the results so far, then returns
// ErrInterrupted.
type interruption struct {
	phase string
	// elapsed and of are, for a measured phase, how much of it ran and
	// how long it was to run; zero for a phase that measures nothing.
	elapsed, of time.Duration
}

func (e interruption) Error() string { return "interrupted during " + e.phase }

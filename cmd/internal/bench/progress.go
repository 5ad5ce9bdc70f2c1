package bench

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/coopkv/coopkv/cmd/internal/cli"
)

// progressMode is how a run shows what it is doing.
type progressMode int

const (
	progressQuiet progressMode = iota // -q: nothing
	progressLines                     // not a terminal: a plain line per phase
	progressBars                      // a terminal: a bar per phase
)

// barTick is how often a timed phase's bar moves.
const barTick = 100 * time.Millisecond

// progress reports the load and each timed phase on w.
type progress struct {
	w    io.Writer
	mode progressMode
}

// newProgress picks bars when w is a terminal, plain lines when it is not,
// and nothing when quiet.
func newProgress(w io.Writer, quiet bool) *progress {
	switch {
	case quiet:
		return &progress{w: w, mode: progressQuiet}
	case cli.IsTerminal(w):
		return &progress{w: w, mode: progressBars}
	default:
		return &progress{w: w, mode: progressLines}
	}
}

// printf writes one line, unless quiet.
func (p *progress) printf(format string, args ...any) {
	if p.mode != progressQuiet {
		fmt.Fprintf(p.w, format+"\n", args...)
	}
}

func (p *progress) newBar(max int64, desc string, opts ...progressbar.Option) *progressbar.ProgressBar {
	opts = append([]progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(50 * time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
	}, opts...)
	return progressbar.NewOptions64(max, opts...)
}

// counter is the progress of a phase that does a known amount of work:
// the load.
type counter struct {
	p     *progress
	bar   *progressbar.ProgressBar // nil unless progressBars
	desc  string
	unit  string
	total int64
	start time.Time
}

// count starts reporting a phase of total units of work.
func (p *progress) count(desc string, total int64, unit string) *counter {
	c := &counter{p: p, desc: desc, unit: unit, total: total, start: time.Now()}
	switch p.mode {
	case progressBars:
		c.bar = p.newBar(total, desc, progressbar.OptionShowCount(), progressbar.OptionSetItsString(unit))
	case progressLines:
		p.printf("%s: %d %s", desc, total, unit)
	}
	return c
}

// add reports n more units done.
func (c *counter) add(n int64) {
	if c.bar != nil {
		_ = c.bar.Add64(n) // only a failed write to the terminal
	}
}

// done reports the phase finished.
func (c *counter) done() {
	elapsed := time.Since(c.start)
	if c.bar != nil {
		_ = c.bar.Finish()
	}
	rate := float64(c.total) / max(elapsed.Seconds(), 1e-9)
	c.p.printf("%s: %d %s in %v (%.0f %s/s)", c.desc, c.total, c.unit, elapsed.Round(time.Millisecond), rate, c.unit)
}

// stopped reports the phase stopped (interrupted) after n units.
func (c *counter) stopped(n int64) {
	if c.bar != nil {
		_ = c.bar.Exit()
	}
	c.p.printf("%s: interrupted after %d of %d %s", c.desc, n, c.total, c.unit)
}

// timed reports a phase that lasts d; the returned stop ends the report
// (and, with bars, the goroutine that moves the bar) and must be called.
// A bar stopped before d (the run was interrupted) is left unfinished.
func (p *progress) timed(desc string, d time.Duration) (stop func()) {
	switch p.mode {
	case progressLines:
		p.printf("%s: %v", desc, d)
		return func() {}
	case progressBars:
	default:
		return func() {}
	}
	total := max(d.Milliseconds(), 1)
	bar := p.newBar(total, desc, progressbar.OptionSetPredictTime(false), progressbar.OptionSetElapsedTime(true))
	start := time.Now()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(barTick)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				_ = bar.Set64(min(time.Since(start).Milliseconds(), total))
			}
		}
	})
	return func() {
		close(quit)
		wg.Wait()
		if done := time.Since(start).Milliseconds(); done < total {
			_ = bar.Set64(done)
			_ = bar.Exit()
			return
		}
		_ = bar.Finish()
	}
}

package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNewProgress_Modes(t *testing.T) {
	var buf bytes.Buffer
	assert.Equal(t, progressQuiet, newProgress(&buf, true).mode)
	assert.Equal(t, progressLines, newProgress(&buf, false).mode, "a buffer is not a terminal")
	f, err := os.CreateTemp(t.TempDir(), "out")
	if assert.NoError(t, err) {
		defer f.Close()
		assert.Equal(t, progressLines, newProgress(f, false).mode, "nor is a file")
	}
}

func TestProgress_Quiet(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, true)
	p.printf("hello %d", 1)
	c := p.count("load", 10, "keys")
	c.add(10)
	c.done()
	p.timed("mlfq noisy", time.Second)()
	assert.Empty(t, buf.String())
}

func TestProgress_Lines(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false)
	c := p.count("load", 10, "keys")
	c.add(4)
	c.add(6)
	c.done()
	p.timed("mlfq noisy", 5*time.Second)()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if assert.Len(t, lines, 3, buf.String()) {
		assert.Equal(t, "load: 10 keys", lines[0])
		assert.Regexp(t, `^load: 10 keys in \S+ \(\d+ keys/s\)$`, lines[1])
		assert.Equal(t, "mlfq noisy: 5s", lines[2])
	}
}

func TestProgress_Bars(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, mode: progressBars}
	c := p.count("load", 100, "keys")
	c.add(50)
	c.add(50)
	c.done()
	p.timed("mlfq noisy", 3*barTick)()
	p.timed("sub-millisecond", 500*time.Microsecond)()
	out := buf.String()
	assert.Contains(t, out, "load")
	assert.Contains(t, out, "100/100")
	assert.Contains(t, out, "mlfq noisy")
	assert.Contains(t, out, "100%")
	// goleak in TestMain checks that stop ended the bar's goroutine.
}

func TestProgress_Stopped(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false)
	c := p.count("load", 10, "keys")
	c.add(4)
	c.stopped(4)
	assert.Equal(t, "load: 10 keys\nload: interrupted after 4 of 10 keys\n", buf.String())
}

// TestProgress_BarsStopped checks that a bar stopped early (an
// interrupted run) is not shown finished, and that its line ends.
func TestProgress_BarsStopped(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, mode: progressBars}
	c := p.count("load", 100, "keys")
	c.add(40)
	c.stopped(40)
	p.timed("mlfq noisy", time.Hour)()
	out := buf.String()
	assert.Contains(t, out, "load: interrupted after 40 of 100 keys\n")
	assert.NotContains(t, out, "100%", "neither bar is finished")
	assert.True(t, strings.HasSuffix(out, "\n"), "%q", out)
}

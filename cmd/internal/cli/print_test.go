package cli

import (
	"bytes"
	"errors"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// level is a test result: a table of its own for people.
type level struct {
	Name   string `json:"name"`
	Tables int    `json:"tables"`
	Note   string `json:"note,omitempty"`
}

func (l level) WriteText(w io.Writer) error {
	t := NewTable(w)
	t.Printf("level\t%s\n", l.Name)
	t.Printf("tables\t%d\n", l.Tables)
	return t.Flush()
}

// line is a test item whose text is one tab-separated line.
type line struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func (l line) WriteText(w io.Writer) error {
	_, err := io.WriteString(w, l.Key+"\t"+l.Value+"\n")
	return err
}

// figures is a test result of numbers.
type figures map[string]float64

func (figures) WriteText(io.Writer) error { return nil }

// failWriter fails every write after the first ok bytes.
type failWriter struct {
	ok  int
	err error
}

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) <= f.ok {
		f.ok -= len(p)
		return len(p), nil
	}
	n := f.ok
	f.ok = 0
	return n, f.err
}

// failOnce fails its first write, and passes the others to w.
type failOnce struct {
	w      io.Writer
	err    error
	failed bool
}

func (f *failOnce) Write(p []byte) (int, error) {
	if !f.failed {
		f.failed = true
		return 0, f.err
	}
	return f.w.Write(p)
}

func TestTable_AlignsColumns(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b)
	tb.Println("NAME\tTABLES\tSIZE")
	tb.Printf("%s\t%d\t%s\n", "L0", 12, "3.5 MiB")
	tb.Printf("%s\t%d\t%s\n", "total", 1200, "1 B")
	tb.Println()
	tb.Printf("x\ty\n") // after an empty line: a block of its own
	require.NoError(t, tb.Flush())
	assert.Equal(t, ""+
		"NAME   TABLES  SIZE\n"+
		"L0     12      3.5 MiB\n"+
		"total  1200    1 B\n"+
		"\n"+
		"x  y\n", b.String())
}

// A write that fails is kept: the lines after it are not written, and
// Flush says why.
func TestTable_KeepsTheFirstError(t *testing.T) {
	errDisk := errors.New("disk full")
	var b bytes.Buffer
	tb := NewTable(&failOnce{w: &b, err: errDisk})
	tb.Printf("a\tb\n")
	tb.Println() // ends the block: the tabwriter writes, and fails
	tb.Printf("c\td\n")
	assert.ErrorIs(t, tb.Flush(), errDisk, "the later writes would succeed")
	assert.Empty(t, b.String(), "nothing after the failure")
}

func TestPrinter_Text(t *testing.T) {
	var out, errOut bytes.Buffer
	p := NewPrinter(&out, &errOut, false)
	require.NoError(t, p.Print(level{Name: "L6", Tables: 3}))
	assert.Equal(t, "level   L6\ntables  3\n", out.String(), "the result's text, written out at once")

	out.Reset()
	require.NoError(t, p.Item(line{"a", "1"}))
	require.NoError(t, p.Item(line{"b<c", "2"}))
	assert.Empty(t, out.String(), "items are buffered until Flush")
	require.NoError(t, p.Flush())
	assert.Equal(t, "a\t1\nb<c\t2\n", out.String())

	out.Reset()
	require.NoError(t, p.Frame(level{Name: "L0", Tables: 1}))
	assert.Equal(t, "level   L0\ntables  1\n", out.String(), "no screen to clear: frames follow each other")

	p.Note(func() string { return "3 rows" })
	p.Note(func() string { return "" })
	assert.Equal(t, "3 rows\n", errOut.String(), "notes go to stderr; an empty one prints nothing")
}

// On a terminal each text frame clears the screen first.
func TestPrinter_TextFramesRedrawATerminal(t *testing.T) {
	var out bytes.Buffer
	p := NewPrinter(&out, io.Discard, false)
	p.redraw = true // what NewPrinter sets for a terminal
	require.NoError(t, p.Frame(level{Name: "L0"}))
	require.NoError(t, p.Frame(level{Name: "L1"}))
	assert.Equal(t, clearScreen+"level   L0\ntables  0\n"+clearScreen+"level   L1\ntables  0\n", out.String())
}

func TestPrinter_JSON(t *testing.T) {
	var out, errOut bytes.Buffer
	p := NewPrinter(&out, &errOut, true)
	assert.False(t, p.redraw, "JSON frames never clear the screen")

	require.NoError(t, p.Print(level{Name: "a<b", Tables: 3}))
	assert.Equal(t, "{\n  \"name\": \"a<b\",\n  \"tables\": 3\n}\n", out.String(), "one indented document, HTML unescaped, not the text")

	out.Reset()
	require.NoError(t, p.Item(line{"a", "1"}))
	require.NoError(t, p.Item(line{"b", "2"}))
	require.NoError(t, p.Flush())
	assert.Equal(t, "{\"key\":\"a\",\"value\":\"1\"}\n{\"key\":\"b\",\"value\":\"2\"}\n", out.String(), "JSON lines")

	out.Reset()
	require.NoError(t, p.Frame(level{Name: "L0", Tables: 1}))
	assert.Equal(t, "{\"name\":\"L0\",\"tables\":1}\n", out.String(), "a frame is one line")

	p.Note(func() string {
		t.Error("a note is not worked out for JSON")
		return "x"
	})
	assert.Empty(t, errOut.String(), "no notes with JSON: stderr is for failures")
}

// A writer that fails fails the print, in either form, and a value JSON
// cannot hold is an error, not a half-written document.
func TestPrinter_Errors(t *testing.T) {
	errPipe := errors.New("broken pipe")
	for _, asJSON := range []bool{false, true} {
		p := NewPrinter(&failWriter{err: errPipe}, io.Discard, asJSON)
		assert.ErrorIs(t, p.Print(level{Name: "L0"}), errPipe, "json %v", asJSON)

		p = NewPrinter(&failWriter{err: errPipe}, io.Discard, asJSON)
		require.NoError(t, p.Item(line{"a", "1"}), "json %v: buffered", asJSON)
		assert.ErrorIs(t, p.Flush(), errPipe, "json %v", asJSON)

		p = NewPrinter(&failWriter{err: errPipe}, io.Discard, asJSON)
		assert.ErrorIs(t, p.Frame(level{Name: "L0"}), errPipe, "json %v", asJSON)
	}

	var out bytes.Buffer
	p := NewPrinter(&out, io.Discard, true)
	assert.Error(t, p.Print(figures{"x": math.NaN()}))
	assert.Empty(t, out.String())
}

func TestJSONLine(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, JSONLine(&b, map[string]any{"k": "a&b", "n": 1}))
	assert.Equal(t, "{\"k\":\"a&b\",\"n\":1}\n", b.String())
}

// BenchmarkPrinter_Item is the printer's cost per item of a stream (a
// scan's pairs), in each form.
func BenchmarkPrinter_Item(b *testing.B) {
	for _, asJSON := range []bool{false, true} {
		name := "text"
		if asJSON {
			name = "json"
		}
		b.Run(name, func(b *testing.B) {
			p := NewPrinter(io.Discard, io.Discard, asJSON)
			l := line{Key: "user:0000042", Value: "a value of some thirty bytes.."}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Item(l); err != nil {
					b.Fatal(err)
				}
			}
			require.NoError(b, p.Flush())
		})
	}
}

package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// Result is what a command hands its Printer: a value that encoding/json
// writes for scripts, which writes its own text for people (with a Table
// where it has columns).
type Result interface {
	// WriteText writes the result as a person reads it; it may write
	// nothing (a command that only says so when something is odd).
	WriteText(w io.Writer) error
}

// clearScreen moves the cursor home and clears the terminal (ANSI), so
// that a frame replaces the one before it.
const clearScreen = "\x1b[H\x1b[2J"

// Printer prints a command's results in the one form a --json flag chose,
// so that no command asks the flag itself (as etcdctl's printers do for
// its -w): text for people — each result's WriteText, notes on stderr —
// or JSON for scripts — an indented document per result, a line per item
// of a stream or frame of a refreshing view, and no notes, so that stdout
// is the JSON alone and stderr only failures.
type Printer struct {
	out    *bufio.Writer
	errOut io.Writer
	json   bool
	// redraw is whether a text frame replaces the last: out is a terminal.
	redraw bool
}

// NewPrinter prints to out, notes to errOut, as JSON when asJSON.
func NewPrinter(out, errOut io.Writer, asJSON bool) *Printer {
	return &Printer{out: bufio.NewWriter(out), errOut: errOut, json: asJSON, redraw: !asJSON && IsTerminal(out)}
}

// Print prints one result — JSON: one indented document — and writes it
// out.
func (p *Printer) Print(r Result) error {
	if p.json {
		return p.flushAfter(writeJSON(p.out, r, "  "))
	}
	return p.flushAfter(r.WriteText(p.out))
}

// Item prints one item of a stream (a scan's pairs, a query's rows) —
// JSON: one line — into a buffer: Flush writes it out. Call Flush however
// the stream ends, since what was printed before a failure stands.
func (p *Printer) Item(r Result) error {
	if p.json {
		return writeJSON(p.out, r, "")
	}
	return r.WriteText(p.out)
}

// Frame prints one frame of a view that refreshes — JSON: one line — and
// writes it out. A text frame on a terminal replaces the last; elsewhere
// frames follow each other.
func (p *Printer) Frame(r Result) error {
	if p.redraw {
		if _, err := io.WriteString(p.out, clearScreen); err != nil {
			return err
		}
	}
	if p.json {
		return p.flushAfter(writeJSON(p.out, r, ""))
	}
	return p.flushAfter(r.WriteText(p.out))
}

// Flush writes out the items printed so far.
func (p *Printer) Flush() error { return p.out.Flush() }

// flushAfter writes out what a print wrote, unless it failed.
func (p *Printer) flushAfter(err error) error {
	if err != nil {
		return err
	}
	return p.out.Flush()
}

// Note writes a line for people to stderr: a summary, or a remark on
// something odd that is not a failure. note is called only for text, so
// a note that costs something to find out (a request) costs nothing with
// JSON; an empty note prints nothing.
func (p *Printer) Note(note func() string) {
	if p.json {
		return
	}
	if s := note(); s != "" {
		fmt.Fprintln(p.errOut, s)
	}
}

// JSONLine writes v as one line of JSON, HTML unescaped as Printer's:
// for a text form that is JSON itself (rows whose columns vary).
func JSONLine(w io.Writer, v any) error { return writeJSON(w, v, "") }

// writeJSON writes v as JSON and a newline, indented by indent unless it
// is empty. HTML is not escaped: keys such as "a<b" stay readable.
func writeJSON(w io.Writer, v any, indent string) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	return enc.Encode(v)
}

// Table lines up in columns the cells — separated by tabs — of the lines
// written to it, two spaces apart (text/tabwriter; a line without a tab
// ends a block of columns), and keeps the first error, so that a text
// form writes its lines unchecked and learns of a failed writer at Flush.
type Table struct {
	tw  *tabwriter.Writer
	err error
}

// NewTable writes the aligned lines to w.
func NewTable(w io.Writer) *Table {
	return &Table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

// Printf writes formatted text, as fmt.Printf does.
func (t *Table) Printf(format string, a ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.tw, format, a...)
	}
}

// Println writes its operands and a newline, as fmt.Println does; with
// none, an empty line, which ends a block of columns.
func (t *Table) Println(a ...any) {
	if t.err == nil {
		_, t.err = fmt.Fprintln(t.tw, a...)
	}
}

// Flush writes out the lines still held for alignment, and returns the
// first error of any write.
func (t *Table) Flush() error {
	if t.err != nil {
		return t.err
	}
	return t.tw.Flush()
}

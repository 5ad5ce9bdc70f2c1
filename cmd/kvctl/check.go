package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// checkReport is what kvctl check prints with --json.
type checkReport struct {
	OK bool `json:"ok"`
	kv.CheckReport
	// TableError is DB.Check's failure: the first problem Pebble found,
	// naming the table where it can.
	TableError string `json:"table_error,omitempty"`
	tableErr   error  // TableError's error, for the command's
	// Rows is the --rows check, when asked for.
	Rows *rowsReport `json:"rows,omitempty"`
}

// rowsReport is the result of checking that values decode as rows.
type rowsReport struct {
	Start   string       `json:"start"` // "" = the first key
	End     string       `json:"end"`   // "" = past the last
	Checked int64        `json:"checked"`
	Corrupt []corruptRow `json:"corrupt"`
	// ScanError is a failure of the scan itself (a corrupt block), after
	// which the rest of the range went unchecked.
	ScanError string `json:"scan_error,omitempty"`
	scanErr   error  // ScanError's error, for the command's
}

type corruptRow struct {
	Key   string `json:"key"`
	Error string `json:"error"`
}

// errCheckFailed is check's error when it found problems (and printed
// them); errors.Is finds the store's errors behind it too.
var errCheckFailed = errors.New("check failed")

// checkFailure is a failed check: its text sums up the problems, and it
// wraps errCheckFailed and the errors of the checks that failed.
type checkFailure struct {
	msg  string
	errs []error
}

func (e *checkFailure) Error() string   { return e.msg }
func (e *checkFailure) Unwrap() []error { return e.errs }

// newCheckCmd builds "kvctl check": Pebble's checks of the tables and,
// with --rows, a decode of every value in a range as a coprocessor row.
func newCheckCmd(out *output) *cobra.Command {
	var (
		sf   storeFlags
		rows bool
	)
	cmd := &cobra.Command{
		Use:   "check --dir DIR [--rows START END]",
		Short: "Verify the store's tables, and optionally that values are rows",
		Long: `check opens the store read-only and runs Pebble's checks (DB.Check): it
walks every entry of every level and the memtable, checking the LSM's
ordering and each block's checksum, then verifies every block of every
table file. On success it prints the points, tombstones and tables it
checked.

--rows START END also checks that every value in [START, END) decodes as a
coprocessor row (a msgpack map, as coproc.EncodeRow writes it); an empty
START or END is the open bound. Each corrupt key is named.

Any problem fails the command (exit status 1) after it is printed.`,
		Example: `  kvctl check --dir store
  kvctl check --dir store --rows order: 'order;'
  kvctl check --dir store --rows '' '' --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if rows {
				return exactArgs("START", "END")(cmd, args)
			}
			if len(args) > 0 {
				return fmt.Errorf("%s: unexpected argument %q (a range needs --rows START END)", cmd.CommandPath(), args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			var lo, hi []byte
			if rows {
				if lo, err = parseBound(args[0], out.hex); err != nil {
					return fmt.Errorf("START: %w", err)
				}
				if hi, err = parseBound(args[1], out.hex); err != nil {
					return fmt.Errorf("END: %w", err)
				}
			}
			db, err := sf.open(readOnly, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeStore(db, &err)
			ctx := cmd.Context()
			rep := checkReport{OK: true}
			rep.CheckReport, err = db.Check(ctx)
			if err != nil {
				if err := cli.Interrupted(ctx, err); errors.Is(err, cli.ErrInterrupted) {
					return err
				}
				rep.OK, rep.TableError, rep.tableErr = false, err.Error(), err
			}
			if rows {
				rep.Rows = &rowsReport{Start: formatBound(lo, out.hex), End: formatBound(hi, out.hex), Corrupt: []corruptRow{}}
				it := db.Scan(ctx, lo, hi, nil)
				for k, v := range it.All() {
					rep.Rows.Checked++
					if _, err := coproc.DecodeRow(v); err != nil {
						rep.Rows.Corrupt = append(rep.Rows.Corrupt, corruptRow{Key: formatBytes(k, out.hex), Error: err.Error()})
					}
				}
				if err := it.Err(); err != nil {
					if err := cli.Interrupted(ctx, err); errors.Is(err, cli.ErrInterrupted) {
						return err
					}
					rep.Rows.ScanError, rep.Rows.scanErr = err.Error(), err
				}
				_ = it.Close() // it ended: nothing to report
				if len(rep.Rows.Corrupt) > 0 || rep.Rows.ScanError != "" {
					rep.OK = false
				}
			}
			if err := out.print.Print(&rep); err != nil {
				return err
			}
			if !rep.OK {
				return checkError(&rep)
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().BoolVar(&rows, "rows", false, "also check that the values in [START, END) decode as coprocessor rows")
	return cmd
}

// WriteText prints a check's findings, a line per problem: the table
// error, then each corrupt key.
func (r *checkReport) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.TableError != "" {
		fmt.Fprintf(&b, "corrupt: %s\n", r.TableError)
	} else {
		fmt.Fprintf(&b, "tables ok: %d points, %d tombstones, %d tables verified\n", r.Points, r.Tombstones, r.Tables)
	}
	if rr := r.Rows; rr != nil {
		for _, c := range rr.Corrupt {
			fmt.Fprintf(&b, "corrupt row %s: %s\n", strconv.Quote(c.Key), c.Error)
		}
		if rr.ScanError != "" {
			fmt.Fprintf(&b, "rows: the scan failed after %d values: %s\n", rr.Checked, rr.ScanError)
		}
		if len(rr.Corrupt) == 0 && rr.ScanError == "" {
			fmt.Fprintf(&b, "rows ok: %d values in %s decode as rows\n", rr.Checked, rangeText(rr.Start, rr.End))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// checkError sums up a failed check in one line: the details, every key
// named, were printed above it.
func checkError(r *checkReport) error {
	var what []string
	errs := []error{errCheckFailed}
	if r.tableErr != nil {
		what = append(what, r.TableError)
		errs = append(errs, r.tableErr)
	}
	if rr := r.Rows; rr != nil {
		if n := len(rr.Corrupt); n > 0 {
			keys := make([]string, 0, maxNamed+1)
			for _, c := range rr.Corrupt[:min(n, maxNamed)] {
				keys = append(keys, strconv.Quote(c.Key))
			}
			if n > maxNamed {
				keys = append(keys, fmt.Sprintf("%d more", n-maxNamed))
			}
			what = append(what, fmt.Sprintf("%d value(s) in %s are not rows: %s", n, rangeText(rr.Start, rr.End), joinAnd(keys)))
		}
		if rr.scanErr != nil {
			what = append(what, "the rows' scan failed: "+rr.ScanError)
			errs = append(errs, rr.scanErr)
		}
	}
	return &checkFailure{msg: errCheckFailed.Error() + ": " + strings.Join(what, "; "), errs: errs}
}

// maxNamed is how many corrupt keys the error names; the output above it
// names them all.
const maxNamed = 10

// formatBound is formatBytes for a range bound: "" for the open one.
func formatBound(b []byte, asHex bool) string {
	if b == nil {
		return ""
	}
	return formatBytes(b, asHex)
}

// rangeText renders [start, end) for messages, naming the open bounds.
func rangeText(start, end string) string {
	if start == "" {
		start = "-inf"
	} else {
		start = strconv.Quote(start)
	}
	if end == "" {
		end = "+inf"
	} else {
		end = strconv.Quote(end)
	}
	return "[" + start + ", " + end + ")"
}

// joinAnd joins s as a sentence does: "a, b and c".
func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " and " + s[len(s)-1]
}

package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/coproc"
	"github.com/coopkv/coopkv/kv"
)

// newCopCmd builds "kvctl cop": a coprocessor request from JSON, its rows
// as JSON lines.
func newCopCmd(out *output) *cobra.Command {
	var (
		sf      storeFlags
		reqPath string
	)
	cmd := &cobra.Command{
		Use:   "cop --request FILE.json --dir DIR",
		Short: "Run a coprocessor request and print its rows",
		Long: `cop runs a coprocessor request — ranges, filter, projection, aggregates,
top-N — on the store, opened read-only, and prints the result rows as JSON
lines. The request is JSON with the field names of coproc's encoding
("ranges", "filter", "columns", "group_by", "aggs", "order_by", "limit",
"paging_size", "desc"); --request - reads it from stdin. A range's "start"
and "end" are strings taken byte for byte.

Byte values in the rows (the "_key" column) print as text when printable,
else as hex, as kvctl prints keys. A paged request ("paging_size") is
followed page by page to its end, so every row prints; "limit" then
counts rows over all pages. Without --json a summary goes to stderr.`,
		Example: `  echo '{"ranges":[{}],"aggs":[{"func":"count"}]}' | kvctl cop --request - --dir store
  kvctl cop --request top10.json --dir store | jq .amount

  top10.json:
  {"ranges": [{"start": "order:", "end": "order;"}],
   "filter": {"op": "ge", "args": [{"op": "col", "col": "amount"}, {"op": "const", "value": 100}]},
   "columns": ["_key", "amount"], "order_by": [{"col": "amount", "desc": true}], "limit": 10}`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			req, err := readRequest(reqPath, cmd.InOrStdin())
			if err != nil {
				return err
			}
			db, err := sf.open(readOnly, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeStore(db, &err)
			ctx := cmd.Context()
			p := out.print
			var sum coproc.Stats
			pages := 0
			for resp, err := range kv.CoprocessorPages(ctx, db, req) {
				if err != nil {
					_ = p.Flush() // the pages before stand
					return cli.Interrupted(ctx, err)
				}
				pages++
				addStats(&sum, &resp.Stats)
				for _, row := range resp.Rows {
					if err := p.Item(copRow(jsonRow(row, out.hex))); err != nil {
						return err
					}
				}
			}
			if err := p.Flush(); err != nil {
				return err
			}
			p.Note(func() string {
				return fmt.Sprintf("%d rows returned, %d scanned, %s read, %d page(s); queued %s, executing %s",
					sum.RowsReturned, sum.RowsScanned, size(sum.BytesRead), pages, shortDur(sum.WaitTime), shortDur(sum.ExecTime))
			})
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&reqPath, "request", "", `the request, a JSON file; "-" = stdin (required)`)
	_ = cmd.MarkFlagRequired("request") // the flag exists
	return cmd
}

// readRequest reads and decodes the request at path ("-": stdin).
func readRequest(path string, stdin io.Reader) (*coproc.Request, error) {
	var b []byte
	var err error
	if path == "-" {
		// One byte past the cap, so that DecodeJSON reports a request too
		// large rather than a truncated one.
		b, err = io.ReadAll(io.LimitReader(stdin, coproc.MaxRequestBytes+1))
	} else {
		b, err = readFileCapped(path, coproc.MaxRequestBytes+1)
	}
	if err != nil {
		return nil, fmt.Errorf("--request: %w", err)
	}
	req, err := coproc.DecodeJSON(b)
	if err != nil {
		return nil, fmt.Errorf("--request %s: %w", path, err)
	}
	return req, nil
}

// readFileCapped reads at most limit bytes of the file at path.
func readFileCapped(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// addStats adds a page's figures to the sum over the pages.
func addStats(sum, s *coproc.Stats) {
	sum.RowsScanned += s.RowsScanned
	sum.RowsReturned += s.RowsReturned
	sum.BytesRead += s.BytesRead
	sum.Steps += s.Steps
	sum.Yields += s.Yields
	sum.WaitTime += s.WaitTime
	sum.ExecTime += s.ExecTime
}

// copRow is a result row of cop. Its text is its JSON line too: rows have
// whatever columns the request asks for, and JSON keeps their types.
type copRow map[string]any

func (r copRow) WriteText(w io.Writer) error { return cli.JSONLine(w, r) }

// jsonRow is jsonValue for a row.
func jsonRow(row map[string]any, asHex bool) map[string]any {
	m := make(map[string]any, len(row))
	for k, v := range row {
		m[k] = jsonValue(v, asHex)
	}
	return m
}

// jsonValue makes a row's value printable as JSON: bytes as kvctl prints
// keys (encoding/json would write base64), and the floats JSON has no
// number for (NaN, ±Inf, which an avg or a stored row may hold) as
// strings — encoding/json fails on them.
func jsonValue(v any, asHex bool) any {
	switch x := v.(type) {
	case []byte:
		return formatBytes(x, asHex)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = jsonValue(e, asHex)
		}
		return s
	case map[string]any:
		return jsonRow(x, asHex)
	}
	return v
}

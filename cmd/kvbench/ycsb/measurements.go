package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	// go-ycsb's core workload registers itself.
	_ "github.com/pingcap/go-ycsb/pkg/workload"
)

// go-ycsb's measurements of a phase, read back from the JSON its
// histogram measurement writes.

// opOrder is the order of operations in results.
var opOrder = []string{"READ", "UPDATE", "INSERT", "SCAN", "READ_MODIFY_WRITE", "DELETE"}

// readMeasurements reads the summary go-ycsb's histogram measurement wrote
// as JSON (outputstyle=json): one object per operation, its values strings
// under the column names of go-ycsb's table. TOTAL is left out (it counts
// a read-modify-write's halves, not the workload's operations); an
// operation's _ERROR line becomes its Errors.
func readMeasurements(path string, elapsed time.Duration) ([]opStats, int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("go-ycsb's measurements: %w", err)
	}
	var rows []map[string]string
	if len(strings.TrimSpace(string(b))) > 0 { // nothing measured: nothing written
		if err := json.Unmarshal(b, &rows); err != nil {
			return nil, 0, fmt.Errorf("go-ycsb's measurements in %s: %w", path, err)
		}
	}
	byOp := map[string]*opStats{}
	get := func(op string) *opStats {
		if o, ok := byOp[op]; ok {
			return o
		}
		o := &opStats{Op: op}
		byOp[op] = o
		return o
	}
	var errs []error
	num := func(row map[string]string, col string) int64 {
		n, err := strconv.ParseInt(row[col], 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("go-ycsb's measurements: %s of %s: %w", col, row["Operation"], err))
		}
		return n
	}
	var failed int64
	for _, row := range rows {
		op := row["Operation"]
		switch {
		case op == "TOTAL":
		case strings.HasSuffix(op, "_ERROR"):
			n := num(row, "Count")
			get(strings.TrimSuffix(op, "_ERROR")).Errors += n
			failed += n
		default:
			o := get(op)
			o.Count = num(row, "Count")
			o.OpsPerSec = float64(o.Count) / elapsed.Seconds()
			o.AvgUs = num(row, "Avg(us)")
			o.MinUs = num(row, "Min(us)")
			o.MaxUs = num(row, "Max(us)")
			o.P50Us = num(row, "50th(us)")
			o.P90Us = num(row, "90th(us)")
			o.P95Us = num(row, "95th(us)")
			o.P99Us = num(row, "99th(us)")
			o.P999Us = num(row, "99.9th(us)")
			o.P9999Us = num(row, "99.99th(us)")
		}
	}
	ops := make([]opStats, 0, len(byOp))
	for _, name := range opOrder {
		if o, ok := byOp[name]; ok {
			ops = append(ops, *o)
			delete(byOp, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byOp)) {
		ops = append(ops, *byOp[name])
	}
	return ops, failed, errors.Join(errs...)
}

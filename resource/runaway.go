package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A RunawayRule watches a group's reads (with resource control; without
// it, kv.Options.Runaway watches every read). A read is runaway once it has
// run longer than ExecElapsed of worker time, or read more than RowsScanned
// rows (0 = no limit on that measure). The Action then applies to it for
// the rest of its life, and, for Watch after, to every new read of the
// same group with the same task id (kv.WithTaskID) or, without one, the
// same start key. TiDB's runaway queries are the model (QUERY_LIMIT
// EXEC_ELAPSED, ACTION KILL / COOLDOWN / DRYRUN, WATCH).
//
// The rule is judged at every step against the read's totals and the rule
// in force then: a Put that adds, changes or removes a group's rule
// applies to its running reads from their next step.
type RunawayRule struct {
	// ExecElapsed is the read's worker time, the sum of its steps (not its
	// wall time: time queued or waiting does not count); 0 = no limit. When
	// set, within [MinRunawayExecElapsed, MaxRunawayExecElapsed].
	ExecElapsed time.Duration `json:"exec_elapsed_ns"`
	// RowsScanned is the rows the read has read, coprocessor rows included
	// and counted before any filter; 0 = no limit. At most MaxRunawayRows.
	RowsScanned int64 `json:"rows_scanned"`
	// Action is what befalls a runaway read: dryrun, cooldown or kill.
	Action RunawayAction `json:"action"`
	// Watch is how long, after a read turned runaway, new reads of its
	// identity are runaway from their first step; 0 = no watch. When set,
	// within [MinRunawayWatch, MaxRunawayWatch].
	Watch time.Duration `json:"watch_ns"`
}

// RunawayAction is what happens to a runaway read.
type RunawayAction string

// The actions, from the mildest.
const (
	RunawayDryRun   RunawayAction = "dryrun"   // counted and logged only
	RunawayCooldown RunawayAction = "cooldown" // scheduled as the lowest priority (MLFQ: level 2) from its next step, at a few workers at most (kv: a quarter)
	RunawayKill     RunawayAction = "kill"     // ends at its next step with kv.ErrRunaway
)

// Bounds of a RunawayRule's values. A value outside them is a mistake,
// most often of unit (the JSON durations are nanoseconds: 10 is 10 ns, not
// 10 ms), and Validate refuses it rather than let it kill every read or
// none.
const (
	// MinRunawayExecElapsed is the least ExecElapsed but 0: a point Get's
	// step takes a few µs, so a limit below 100 µs would catch every read.
	MinRunawayExecElapsed = 100 * time.Microsecond
	// MaxRunawayExecElapsed is the most: a day of worker time.
	MaxRunawayExecElapsed = 24 * time.Hour
	// MaxRunawayRows is the most RowsScanned: 2^40 (~1.1e12), more than a
	// read scanning 10 M rows/s reads in MaxRunawayExecElapsed.
	MaxRunawayRows int64 = 1 << 40
	// MinRunawayWatch is the least Watch but 0: a watch under a second
	// would expire before most clients retried.
	MinRunawayWatch = time.Second
	// MaxRunawayWatch is the most: a day, after which a read's identity
	// is as good as new.
	MaxRunawayWatch = 24 * time.Hour
)

// Valid reports whether a is one of the three actions.
func (a RunawayAction) Valid() bool {
	return a == RunawayDryRun || a == RunawayCooldown || a == RunawayKill
}

// severity orders the actions: none (""), dryrun, cooldown, kill.
func (a RunawayAction) severity() int {
	switch a {
	case RunawayDryRun:
		return 1
	case RunawayCooldown:
		return 2
	case RunawayKill:
		return 3
	}
	return 0
}

// severer returns the severer of a and b: a read both watched and caught
// by its rule suffers the worse of the two.
func severer(a, b RunawayAction) RunawayAction {
	if b.severity() > a.severity() {
		return b
	}
	return a
}

// ParseRunawayAction reads "dryrun", "cooldown" or "kill", in any case (as
// TiDB writes them, DRYRUN), for a command line.
func ParseRunawayAction(s string) (RunawayAction, error) {
	a := RunawayAction(strings.ToLower(strings.TrimSpace(s)))
	if !a.Valid() {
		return "", fmt.Errorf("%w: Action %q is not dryrun, cooldown or kill", ErrInvalidRunaway, s)
	}
	return a, nil
}

// Validate reports every problem of r at once, each naming its field and
// wrapping ErrInvalidRunaway. A nil rule (no rule) is valid.
func (r *RunawayRule) Validate() error {
	if r == nil {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidRunaway}, args...)...))
	}
	switch {
	case r.ExecElapsed < 0:
		bad("ExecElapsed %v is negative", r.ExecElapsed)
	case r.ExecElapsed != 0 && (r.ExecElapsed < MinRunawayExecElapsed || r.ExecElapsed > MaxRunawayExecElapsed):
		bad("ExecElapsed %v is neither 0 (no limit) nor within [%v, %v]", r.ExecElapsed, MinRunawayExecElapsed, MaxRunawayExecElapsed)
	}
	switch {
	case r.RowsScanned < 0:
		bad("RowsScanned %d is negative", r.RowsScanned)
	case r.RowsScanned > MaxRunawayRows:
		bad("RowsScanned %d is more than %d", r.RowsScanned, MaxRunawayRows)
	}
	if r.ExecElapsed == 0 && r.RowsScanned == 0 {
		bad("neither ExecElapsed nor RowsScanned is set: the rule would catch no read")
	}
	if !r.Action.Valid() {
		bad("Action %q is not dryrun, cooldown or kill", string(r.Action))
	}
	switch {
	case r.Watch < 0:
		bad("Watch %v is negative", r.Watch)
	case r.Watch != 0 && (r.Watch < MinRunawayWatch || r.Watch > MaxRunawayWatch):
		bad("Watch %v is neither 0 (no watch) nor within [%v, %v]", r.Watch, MinRunawayWatch, MaxRunawayWatch)
	}
	return errors.Join(errs...)
}

// String renders r for a log line or a table: "kill past 10ms or 5000
// rows, watch 1m0s"; "none" for a nil rule.
func (r *RunawayRule) String() string {
	if r == nil {
		return "none"
	}
	var b strings.Builder
	b.WriteString(string(r.Action))
	b.WriteString(" past ")
	if r.ExecElapsed > 0 {
		b.WriteString(r.ExecElapsed.String())
		if r.RowsScanned > 0 {
			b.WriteString(" or ")
		}
	}
	if r.RowsScanned > 0 {
		b.WriteString(strconv.FormatInt(r.RowsScanned, 10))
		b.WriteString(" rows")
	}
	if r.Watch > 0 {
		b.WriteString(", watch ")
		b.WriteString(r.Watch.String())
	}
	return b.String()
}

// clone returns a copy of r (nil for nil), so that what a caller gave Put
// or got from Get is never the rule in force.
func (r *RunawayRule) clone() *RunawayRule {
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

// clone returns a copy of c that shares nothing with it.
func (c *GroupConfig) clone() GroupConfig {
	d := *c
	d.Runaway = c.Runaway.clone()
	return d
}

// judge reports whether a read that has run exec of worker time and read
// rows rows is runaway by rule: past either limit that is set. A nil rule
// catches nothing. It is the whole rule: the step's caller passes the
// read's totals, so a changed rule judges the same totals afresh.
func judge(rule *RunawayRule, exec time.Duration, rows int64) bool {
	if rule == nil {
		return false
	}
	return rule.ExecElapsed > 0 && exec > rule.ExecElapsed ||
		rule.RowsScanned > 0 && rows > rule.RowsScanned
}

// UnmarshalJSON reads a rule in the wire names (exec_elapsed_ns,
// rows_scanned, action, watch_ns, as the admin handler writes it) or in the
// Go field names (ExecElapsed, RowsScanned, Action, Watch: a
// json:",omitempty" tag's, as shared/API.md spells the field), durations
// as nanoseconds either way. A field given both ways, or an unknown field,
// is an error: a rule that is not what its writer meant must not pass.
func (r *RunawayRule) UnmarshalJSON(b []byte) error {
	var w struct {
		ExecElapsedNs *time.Duration `json:"exec_elapsed_ns"`
		ExecElapsed   *time.Duration `json:"ExecElapsed"`
		RowsScanned   *int64         `json:"rows_scanned"`
		RowsScannedGo *int64         `json:"RowsScanned"`
		Action        RunawayAction  `json:"action"` // matches Action too: names match without case
		WatchNs       *time.Duration `json:"watch_ns"`
		Watch         *time.Duration `json:"Watch"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRunaway, err)
	}
	var errs []error
	*r = RunawayRule{
		ExecElapsed: pick(&errs, "exec_elapsed_ns", w.ExecElapsedNs, w.ExecElapsed),
		RowsScanned: pick(&errs, "rows_scanned", w.RowsScanned, w.RowsScannedGo),
		Action:      w.Action,
		Watch:       pick(&errs, "watch_ns", w.WatchNs, w.Watch),
	}
	return errors.Join(errs...)
}

// pick is a field given by its wire name or by its Go name, the zero value
// for neither; both is an error, added to errs.
func pick[T any](errs *[]error, name string, wire, goName *T) (v T) {
	switch {
	case wire != nil && goName != nil:
		*errs = append(*errs, fmt.Errorf("%w: %s given twice, by its wire name and its Go name", ErrInvalidRunaway, name))
	case wire != nil:
		v = *wire
	case goName != nil:
		v = *goName
	}
	return v
}

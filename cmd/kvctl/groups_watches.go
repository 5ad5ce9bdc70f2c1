package main

import (
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// watchesReport is what kvctl groups watches prints with --json.
type watchesReport struct {
	// Judged is false with the direct scheduler, whose reads are neither
	// judged nor watched.
	Judged  bool       `json:"judged"`
	Watches []watchRow `json:"watches"`
	// Evicted counts the live watches dropped to make room in a full list.
	Evicted int64 `json:"watches_evicted"`
}

// watchRow is a live watch. Its identity is a task id or, when there is
// none, a start key, printed as kvctl prints keys (text or "0x" hex; ""
// is the open start, with --hex too); StartKeyCut says the store keeps
// only the key's first resource.MaxWatchKeyLen bytes.
type watchRow struct {
	Group       string                 `json:"group"`
	TaskID      uint64                 `json:"task_id,omitempty"`
	StartKey    *string                `json:"start_key,omitempty"`
	StartKeyCut bool                   `json:"start_key_cut,omitempty"`
	Action      resource.RunawayAction `json:"action"`
	Expires     time.Time              `json:"expires"`
	// ExpiresIn is Expires less this machine's time when kvctl asked.
	ExpiresIn time.Duration `json:"expires_in_ns"`
}

// newGroupsWatchesCmd builds "kvctl groups watches" (GET /stats); lf are
// the flags of its parent, groups.
func newGroupsWatchesCmd(out *output, lf *liveFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "watches",
		Short: "List the live runaway watches",
		Long: `watches lists the live runaway watches of a running store (GET /stats),
soonest to expire first. A read that a runaway rule with a watch caught
(groups set --runaway-watch, or kv.Options.Runaway) has its identity
watched: until the watch expires, new reads of its group with that
identity are runaway from their first step, with the watch's action.

  group       the group the read ran in ("default" without resource control)
  action      dryrun, cooldown or kill
  expires in  from this machine's clock (--json: also the time itself)
  identity    "task N" for a read with a task id (kv.WithTaskID), else
              "key K": its start key, printed as keys are (text, or hex
              with --hex or when not printable), ending in "…" when the
              store keeps only its first bytes; "open start" for a scan
              from the first key`,
		Example: `  kvctl groups watches
  kvctl groups watches --json | jq '.watches[] | select(.action == "kill")'`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st kv.Stats
			if err := lf.call(cmd.Context(), "GET", "/stats", nil, &st); err != nil {
				return err
			}
			return out.print.Print(newWatchesReport(st.Runaway, time.Now(), out.hex))
		},
	}
}

// newWatchesReport lists the watches of rs (nil: the direct scheduler) as
// of now, with keys printed as hex when asHex.
func newWatchesReport(rs *resource.RunawayStats, now time.Time, asHex bool) *watchesReport {
	r := &watchesReport{Judged: rs != nil, Watches: []watchRow{}}
	if rs == nil {
		return r
	}
	r.Evicted = rs.WatchesEvicted
	for _, w := range rs.Watches {
		row := watchRow{Group: w.Group, TaskID: w.TaskID, Action: w.Action, Expires: w.Expires, ExpiresIn: max(w.Expires.Sub(now), 0)}
		if w.TaskID == 0 {
			k := "" // the open start, hex or not
			if len(w.StartKey) > 0 {
				k = formatBytes(w.StartKey, asHex)
			}
			row.StartKey, row.StartKeyCut = &k, w.StartKeyCut
		}
		r.Watches = append(r.Watches, row)
	}
	return r
}

// WriteText prints the watches as a table.
func (r *watchesReport) WriteText(w io.Writer) error {
	t := cli.NewTable(w)
	switch {
	case !r.Judged:
		t.Println("no read pool (scheduler direct): reads are not judged, nor watched")
	case len(r.Watches) == 0:
		t.Println("no live runaway watches")
	default:
		// The identity last: a start key may be long.
		t.Println("GROUP\tACTION\tEXPIRES IN\tIDENTITY")
		for _, wr := range r.Watches {
			t.Printf("%s\t%s\t%s\t%s\n", wr.Group, wr.Action, expiresIn(wr.ExpiresIn), wr.identity())
		}
	}
	if r.Evicted > 0 {
		t.Printf("%d watches evicted to make room in a full list\n", r.Evicted)
	}
	return t.Flush()
}

// identity renders the watch's identity for the table.
func (wr *watchRow) identity() string {
	if wr.StartKey == nil {
		return "task " + strconv.FormatUint(wr.TaskID, 10)
	}
	k := *wr.StartKey
	if k == "" {
		return "open start" // a scan from the first key
	}
	if wr.StartKeyCut {
		k += "…"
	}
	return "key " + k
}

// expiresIn renders a watch's time left: to the second, and below it to
// three digits.
func expiresIn(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return shortDur(d)
}

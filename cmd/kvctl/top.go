package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/admin"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// topFrame is one refresh of top; with --json each is one JSON line.
type topFrame struct {
	Time time.Time `json:"time"`
	// WindowSec is the time since the previous refresh that the rates are
	// over; 0 when there are no rates (the first frame, or after the
	// endpoint's store changed).
	WindowSec       float64      `json:"window_s"`
	Scheduler       kv.Scheduler `json:"scheduler"`
	Closed          bool         `json:"closed"`
	Pool            *topPool     `json:"pool"` // null with the direct scheduler
	ResourceControl bool         `json:"resource_control"`
	Groups          []topGroup   `json:"groups"`
	// Runaway is what the runaway rules caught, null with the direct
	// scheduler (its reads have no steps to judge).
	Runaway *topRunaway `json:"runaway"`
	// Note says why a frame has no figures: the endpoint answered 503
	// (kvbench between two stores), which top waits out.
	Note string `json:"note,omitempty"`
	url  string // the endpoint's, for the text's title
}

// topPool is the pool's part of a frame. The rates are null when the frame
// has none; QueueWaitP99 is null also when no task waited in the window.
type topPool struct {
	Workers         int      `json:"workers"`
	Busy            int      `json:"busy"`
	Extra           int      `json:"extra"`
	Queued          int      `json:"queued"`
	Held            int      `json:"held"`
	Running         int      `json:"running"`
	StepsPerSec     *float64 `json:"steps_per_sec"`
	CompletedPerSec *float64 `json:"completed_per_sec"`
	// QueueWaits is the number of queue waits in the window, and
	// QueueWaitP99 their 99th percentile, interpolated in the
	// cumulative buckets' difference (as Prometheus's histogram_quantile
	// does).
	QueueWaits   *uint64        `json:"queue_waits"`
	QueueWaitP99 *time.Duration `json:"queue_wait_p99_ns"`
	// BusyFull and BusyWait count the reads refused with ErrBusy since the
	// pool started, by reason: the pool full (MaxTasks), and the estimated
	// wait past the read's kv.WithMaxQueueWait (the reasons of
	// coopkv_busy_total); their rates are over the window.
	BusyFull       int64    `json:"busy_full"`
	BusyWait       int64    `json:"busy_wait"`
	BusyFullPerSec *float64 `json:"busy_full_per_sec"`
	BusyWaitPerSec *float64 `json:"busy_wait_per_sec"`
	// Waits is how the estimate served the reads with a limit that were
	// admitted, since the pool started.
	Waits readpool.WaitStats `json:"waits"`
}

// topRunaway is the runaway part of a frame: the reads the rules caught,
// per group that has any, and the live watches.
type topRunaway struct {
	Groups []topRunawayGroup `json:"groups"`
	// OtherGroups counts the runaway reads of the groups past the ones
	// counted by name (resource.MaxRunawayGroups).
	OtherGroups    int64 `json:"other_groups"`
	Watches        int   `json:"watches"`
	WatchesEvicted int64 `json:"watches_evicted"`
}

// topRunawayGroup is a group's runaway reads since the store opened, by
// action, and their rates over the window (null without one).
type topRunawayGroup struct {
	resource.RunawayGroupStats
	DryRunPerSec   *float64 `json:"dryrun_per_sec"`
	CooldownPerSec *float64 `json:"cooldown_per_sec"`
	KillPerSec     *float64 `json:"kill_per_sec"`
}

// topGroup is a group's part of a frame.
type topGroup struct {
	Name      string  `json:"name"`
	Priority  string  `json:"priority"`
	RUPerSec  float64 `json:"ru_per_sec"` // configured; 0 = unlimited
	Burstable bool    `json:"burstable"`
	// RURate is the RU consumed per second over the window; null when the
	// frame has no rates or the group is new.
	RURate  *float64 `json:"ru_rate"`
	Queued  int64    `json:"queued"`
	Running int64    `json:"running"`
	Held    int64    `json:"held"`
}

// snapshot is what one refresh read from the endpoint.
type snapshot struct {
	at     time.Time
	stats  kv.Stats
	groups admin.GroupsList
}

// newTopCmd builds "kvctl top".
func newTopCmd(out *output) *cobra.Command {
	var (
		lf       liveFlags
		interval time.Duration
		count    int
	)
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Refresh the pool's and the groups' figures every second, with rates",
		Long: `top reads the pool's and the groups' figures every second (GET /stats and
GET /groups) and shows, from each refresh and the one before it:

  steps/s and tasks completed/s of the read pool;
  the queue wait's p99 over that second: the percentile of the waits that
    ended in it, from the difference of the two refreshes' cumulative
    histograms, not since the pool started as "kvctl pool" shows;
  each group's RU/s consumed, beside its configured RU/s;
  the reads refused with ErrBusy, by reason — full (MaxTasks queued and
    running) and wait (the estimated wait past the read's
    WithMaxQueueWait) — since the store opened and per second; and, once
    a read had such a limit, how many of those admitted started within
    it and within their estimate;
  the reads runaway rules caught, per group and action (dryrun,
    cooldown, kill; without resource control every read is in the group
    "default"), those a watch caught at their start, and the live
    watches ("kvctl groups watches" lists them).

It clears the screen between frames when stdout is a terminal; otherwise
(and with --json, one JSON line per frame) it appends. When the endpoint
answers 503 — kvbench between two stores — top shows its message and
waits. Ctrl-C ends it, with exit status 130.`,
		Example: `  kvctl top
  kvctl top --addr 127.0.0.1:7070 --json | jq .pool.steps_per_sec`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval <= 0 {
				return fmt.Errorf("--interval %v: want a positive duration", interval)
			}
			if count < 0 {
				return fmt.Errorf("--count %d: want 0 (until Ctrl-C) or more", count)
			}
			c, err := lf.client()
			if err != nil {
				return err
			}
			defer c.close()
			tp := &top{c: c, p: out.print, interval: interval}
			return tp.run(cmd.Context(), count)
		},
	}
	lf.add(cmd)
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "time between refreshes")
	cmd.Flags().IntVar(&count, "count", 0, "stop after this many refreshes; 0 = until Ctrl-C")
	// For tests and scripts; an operator watches at the default.
	_ = cmd.Flags().MarkHidden("interval")
	_ = cmd.Flags().MarkHidden("count")
	return cmd
}

// top is one run of kvctl top.
type top struct {
	c        *adminClient
	p        *cli.Printer
	interval time.Duration
}

// run refreshes count times (0: until ctx ends). Ctrl-C is how an
// operator stops it, so it returns cli.ErrInterrupted then.
func (tp *top) run(ctx context.Context, count int) error {
	tick := time.NewTicker(tp.interval)
	defer tick.Stop()
	var prev *snapshot
	for n := 0; count == 0 || n < count; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return tp.stopped(ctx)
			case <-tick.C:
			}
		}
		cur, err := tp.fetch(ctx)
		var se *admin.StatusError
		switch {
		case ctx.Err() != nil:
			return tp.stopped(ctx)
		case errors.As(err, &se) && se.Code == http.StatusServiceUnavailable:
			prev = nil // the next store's counters start afresh
			if err := tp.print(&topFrame{Time: time.Now(), Note: se.Msg}); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		}
		if err := tp.print(frame(prev, cur)); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}

// stopped is run's error when ctx ended: cli.ErrInterrupted for Ctrl-C,
// which exits 130 without a message.
func (tp *top) stopped(ctx context.Context) error {
	return cli.Interrupted(ctx, context.Cause(ctx))
}

// fetch takes a snapshot: /stats, stamped when it answered, then
// /groups.
func (tp *top) fetch(ctx context.Context) (*snapshot, error) {
	var s snapshot
	var err error
	if s.stats, err = tp.c.Stats(ctx); err != nil {
		return nil, tp.c.explain(err)
	}
	s.at = time.Now()
	if s.groups, err = tp.c.Groups(ctx); err != nil {
		return nil, tp.c.explain(err)
	}
	return &s, nil
}

// frame computes a frame from the refresh cur and the one before it, prev
// (nil for the first). A counter that went back means the endpoint now
// serves another store: that frame has no rates.
func frame(prev, cur *snapshot) *topFrame {
	f := &topFrame{
		Time:            cur.at,
		Scheduler:       cur.stats.Scheduler,
		Closed:          cur.stats.Closed,
		ResourceControl: cur.groups.ResourceControl,
	}
	var window float64
	if prev != nil {
		window = cur.at.Sub(prev.at).Seconds()
	}
	if p := cur.stats.Pool; p != nil {
		f.Pool = &topPool{Workers: p.Workers, Busy: p.Busy, Extra: p.Extra, Queued: p.Queued, Held: p.Held, Running: p.Running,
			BusyFull: p.RejectedBusy, BusyWait: p.Waits.Refused, Waits: p.Waits}
		if prev != nil && prev.stats.Pool != nil && window > 0 {
			q := prev.stats.Pool
			if p.Steps >= q.Steps && p.Completed >= q.Completed && p.RejectedBusy >= q.RejectedBusy && p.Waits.Refused >= q.Waits.Refused {
				f.WindowSec = window
				f.Pool.StepsPerSec = ptr(float64(p.Steps-q.Steps) / window)
				f.Pool.CompletedPerSec = ptr(float64(p.Completed-q.Completed) / window)
				f.Pool.BusyFullPerSec = ptr(float64(p.RejectedBusy-q.RejectedBusy) / window)
				f.Pool.BusyWaitPerSec = ptr(float64(p.Waits.Refused-q.Waits.Refused) / window)
				if d, n, ok := windowQuantile(q.QueueWait, p.QueueWait, 0.99); ok {
					f.Pool.QueueWaits = &n
					if n > 0 {
						f.Pool.QueueWaitP99 = &d
					}
				}
			}
		}
	}
	before := map[string]float64{}
	if prev != nil {
		for _, g := range prev.groups.Groups {
			before[g.Name] = g.RU
		}
	}
	for _, g := range cur.groups.Groups {
		tg := topGroup{Name: g.Name, Priority: g.Priority, RUPerSec: g.RUPerSec, Burstable: g.Burstable, Queued: g.Queued, Running: g.Running, Held: g.Held}
		if ru0, ok := before[g.Name]; ok && window > 0 && g.RU >= ru0 {
			f.WindowSec = window
			tg.RURate = ptr((g.RU - ru0) / window)
		}
		f.Groups = append(f.Groups, tg)
	}
	if r := cur.stats.Runaway; r != nil {
		var before *resource.RunawayStats
		if prev != nil && window > 0 {
			before = prev.stats.Runaway
		}
		f.Runaway = runawayFrame(before, r, window)
		if f.Runaway.hasRates() {
			f.WindowSec = window
		}
	}
	return f
}

// runawayFrame is the runaway part of a frame from the counts cur and,
// for the rates, prev taken window seconds before (nil: no rates). A
// group missing from prev had no runaway read then; one whose counts
// went back (another store) has no rates.
func runawayFrame(prev, cur *resource.RunawayStats, window float64) *topRunaway {
	r := &topRunaway{OtherGroups: cur.OtherGroups, Watches: len(cur.Watches), WatchesEvicted: cur.WatchesEvicted}
	before := map[string]resource.RunawayGroupStats{}
	if prev != nil {
		for _, g := range prev.Groups {
			before[g.Group] = g
		}
	}
	for _, g := range cur.Groups {
		tg := topRunawayGroup{RunawayGroupStats: g}
		q := before[g.Group]
		if prev != nil && g.DryRun >= q.DryRun && g.Cooldown >= q.Cooldown && g.Kill >= q.Kill {
			tg.DryRunPerSec = ptr(float64(g.DryRun-q.DryRun) / window)
			tg.CooldownPerSec = ptr(float64(g.Cooldown-q.Cooldown) / window)
			tg.KillPerSec = ptr(float64(g.Kill-q.Kill) / window)
		}
		r.Groups = append(r.Groups, tg)
	}
	return r
}

// hasRates reports whether any group's rates were computed.
func (r *topRunaway) hasRates() bool {
	for _, g := range r.Groups {
		if g.KillPerSec != nil {
			return true
		}
	}
	return false
}

// ptr returns a pointer to a copy of v, for the optional JSON figures.
func ptr[T any](v T) *T { return &v }

// windowQuantile is the q-quantile of the observations between two
// snapshots of one cumulative histogram, and their number. Within the
// bucket that holds it the quantile is interpolated linearly; past the
// last bucket it is that bucket's bound (a lower bound). ok is false when
// the two do not fit together: different buckets, or counts that went
// back (another pool).
func windowQuantile(prev, cur readpool.DurationSummary, q float64) (d time.Duration, n uint64, ok bool) {
	if cur.Count < prev.Count || len(cur.Buckets) != len(prev.Buckets) {
		return 0, 0, false
	}
	n = cur.Count - prev.Count
	delta := make([]uint64, len(cur.Buckets))
	for i, b := range cur.Buckets {
		p := prev.Buckets[i]
		if b.Le != p.Le || b.Count < p.Count {
			return 0, 0, false
		}
		delta[i] = b.Count - p.Count
	}
	if n == 0 {
		return 0, 0, true
	}
	rank := q * float64(n)
	var lo time.Duration
	var loCount uint64
	for i, c := range delta {
		hi := cur.Buckets[i].Le
		if float64(c) >= rank && c > loCount {
			frac := (rank - float64(loCount)) / float64(c-loCount)
			return lo + time.Duration(frac*float64(hi-lo)), n, true
		}
		lo, loCount = hi, c
	}
	return lo, n, true // past the last bucket, or no buckets (lo is 0)
}

// print prints a frame of the endpoint at url, as the printer's frames
// are: a JSON line, or a table that replaces the last one on a terminal.
func (tp *top) print(f *topFrame) error {
	f.url = tp.c.URL()
	return tp.p.Frame(f)
}

// WriteText writes the frame as tables.
func (f *topFrame) WriteText(w io.Writer) error {
	tw := cli.NewTable(w)
	tw.Printf("kvctl top — %s — %s\n", f.Time.Format(time.TimeOnly), f.url)
	if f.Note != "" {
		tw.Printf("the endpoint says: %s; waiting\n\n", f.Note)
		return tw.Flush()
	}
	tw.Printf("scheduler %s%s\n\n", f.Scheduler, closedNote(f.Closed))
	if p := f.Pool; p != nil {
		tw.Printf("workers %d (busy %d, extra %d)\tqueued %d\theld %d\trunning %d\n", p.Workers, p.Busy, p.Extra, p.Queued, p.Held, p.Running)
		wait := "-"
		if p.QueueWaitP99 != nil {
			wait = fmt.Sprintf("%s (%d waits)", shortDur(*p.QueueWaitP99), *p.QueueWaits)
		} else if p.QueueWaits != nil {
			wait = "no waits"
		}
		tw.Printf("steps/s %s\tcompleted/s %s\tqueue-wait p99 %s\n", rate(p.StepsPerSec), rate(p.CompletedPerSec), wait)
		estimates := ""
		if w := p.Waits; w.Started > 0 {
			estimates = fmt.Sprintf("\tstarted within limit %s, within estimate %s (of %d with a limit)",
				percent(float64(w.WithinLimit)/float64(w.Started)), percent(float64(w.WithinEstimate)/float64(w.Started)), w.Started)
		}
		tw.Printf("busy: full %s\twait %s%s\n\n", countRate(p.BusyFull, p.BusyFullPerSec), countRate(p.BusyWait, p.BusyWaitPerSec), estimates)
	} else {
		tw.Printf("no read pool (scheduler %s)\n\n", f.Scheduler)
	}
	if f.ResourceControl {
		tw.Println("resource control on")
	} else {
		tw.Println("resource control off (groups do not schedule reads)")
	}
	tw.Println("GROUP\tPRIORITY\tRU/S LIMIT\tRU/S NOW\tQUEUED\tRUNNING\tHELD")
	for _, g := range f.Groups {
		tw.Printf("%s\t%s\t%s\t%s\t%d\t%d\t%d\n", g.Name, g.Priority, ruLimit(g.RUPerSec), rate(g.RURate), g.Queued, g.Running, g.Held)
	}
	tw.Println()
	if r := f.Runaway; r != nil {
		r.writeText(tw)
	}
	return tw.Flush()
}

// writeText writes the runaway reads: one line while there are none, else
// a table of the groups that have some.
func (r *topRunaway) writeText(tw *cli.Table) {
	watches := fmt.Sprintf("live watches: %d", r.Watches)
	if r.WatchesEvicted > 0 {
		watches += fmt.Sprintf(", %d evicted from a full list", r.WatchesEvicted)
	}
	if len(r.Groups) == 0 && r.OtherGroups == 0 {
		tw.Printf("runaway reads: none (%s)\n\n", watches)
		return
	}
	tw.Printf("runaway reads (%s)\n", watches)
	tw.Println("GROUP\tDRYRUN\tCOOLDOWN\tKILL\tBY WATCH")
	for _, g := range r.Groups {
		tw.Printf("%s\t%s\t%s\t%s\t%d\n", g.Group, countRate(g.DryRun, g.DryRunPerSec), countRate(g.Cooldown, g.CooldownPerSec),
			countRate(g.Kill, g.KillPerSec), g.Watched)
	}
	if r.OtherGroups > 0 {
		tw.Printf("(other groups)\t%d in all\n", r.OtherGroups)
	}
	tw.Println()
}

// countRate renders a counter and, when the frame has one, its rate.
func countRate(n int64, perSec *float64) string {
	if perSec == nil {
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprintf("%d (%s/s)", n, ru(*perSec))
}

// rate renders a per-second figure, "-" when there is none yet.
func rate(v *float64) string {
	if v == nil {
		return "-"
	}
	return ru(*v)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv/admin"
	"github.com/coopkv/coopkv/resource"
)

// errEmptyGroup refuses an empty NAME, which would address the list of
// groups instead of one.
var errEmptyGroup = errors.New("empty group name")

// groupsReport is what kvctl groups prints with --json.
type groupsReport struct {
	ResourceControl bool       `json:"resource_control"`
	Groups          []groupRow `json:"groups"`
	// Watches is the number of live runaway watches ("kvctl groups
	// watches" lists them).
	Watches int `json:"watches"`
	// RunawayUnlisted are the runaway reads of groups not listed (deleted
	// since), and RunawayOtherGroups those of the groups past the ones
	// counted by name (resource.MaxRunawayGroups).
	RunawayUnlisted    []resource.RunawayGroupStats `json:"runaway_unlisted,omitempty"`
	RunawayOtherGroups int64                        `json:"runaway_other_groups,omitempty"`
}

// groupRow is a group's figures as the endpoint gives them, its share,
// and its runaway reads.
type groupRow struct {
	resource.GroupStats
	// Share is the group's RU/s over the total RU/s of the limited groups
	// (RU/s > 0): what it gets when they all want more than the pool
	// has. nil (null) for an unlimited group.
	Share *float64 `json:"share"`
	// RunawayReads counts the group's reads that runaway rules caught
	// since the store opened, by action (GET /stats); nil (null) with the
	// direct scheduler, whose reads are not judged.
	RunawayReads *resource.RunawayGroupStats `json:"runaway_reads"`
}

// newGroupsCmd builds "kvctl groups" (GET /groups) with its subcommands
// set and delete.
func newGroupsCmd(out *output) *cobra.Command {
	var lf liveFlags
	cmd := &cobra.Command{
		Use:   "groups",
		Short: "Show the resource groups; set and delete them",
		Long: `groups shows the resource groups of a running store (GET /groups), one
row per group:

  priority    its class: high always runs before medium, medium before low
  RU/s        its share and, unless burstable, its limit; 0 = unlimited
  share       its RU/s over the total RU/s of the limited groups
  burstable   whether it may exceed its RU/s when the pool has room
  RU last s   request units consumed over the last second
  RU total    request units consumed since the store opened
  queued, running, held (waiting for the group's tokens)
  throttled   how long its tasks have been held by its limit, in all
  runaway     its runaway rule: the action, past which limits, the watch
  runaway reads  its reads the rules caught since the store opened, by
              action (GET /stats), and how many of them a watch caught

The groups schedule reads only when the store runs with resource control
(kv.Options.ResourceControl); kvctl says whether it does. Without it they
can still be configured, and apply once the store is opened with it; the
rule kv.Options.Runaway then judges every read, counted under "default".
"kvctl groups watches" lists the live runaway watches.`,
		Example: `  kvctl groups
  kvctl groups set batch --ru 2000 --priority low
  kvctl groups set oltp --ru 500 --burstable --priority high
  kvctl groups set batch --ru 2000 --runaway-exec 500ms --runaway-action cooldown --runaway-watch 10m
  kvctl groups delete batch
  kvctl groups watches`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := lf.client()
			if err != nil {
				return err
			}
			defer c.close()
			ctx := cmd.Context()
			a, err := c.Groups(ctx)
			if err != nil {
				return cli.Interrupted(ctx, c.explain(err))
			}
			st, err := c.Stats(ctx)
			if err != nil {
				return cli.Interrupted(ctx, c.explain(err))
			}
			return out.print.Print(newGroupsReport(a, st.Runaway))
		},
	}
	lf.add(cmd)
	cmd.AddCommand(newGroupsSetCmd(out, &lf), newGroupsDeleteCmd(out, &lf), newGroupsWatchesCmd(out, &lf))
	return cmd
}

// newGroupsReport puts together the groups of GET /groups and their
// runaway reads from GET /stats (rs nil: the direct scheduler, no counts).
func newGroupsReport(a admin.GroupsList, rs *resource.RunawayStats) *groupsReport {
	r := &groupsReport{ResourceControl: a.ResourceControl, Groups: groupRows(a.Groups)}
	if rs == nil {
		return r
	}
	r.Watches, r.RunawayOtherGroups = len(rs.Watches), rs.OtherGroups
	counts := map[string]resource.RunawayGroupStats{}
	for _, g := range rs.Groups {
		counts[g.Group] = g
	}
	for i := range r.Groups {
		g := r.Groups[i].Name
		c, ok := counts[g]
		if !ok {
			c = resource.RunawayGroupStats{Group: g}
		}
		r.Groups[i].RunawayReads = &c
		delete(counts, g)
	}
	for _, g := range rs.Groups { // by name, as the endpoint sorts them
		if _, ok := counts[g.Group]; ok {
			r.RunawayUnlisted = append(r.RunawayUnlisted, g)
		}
	}
	return r
}

// groupRows adds each group's share of the limited groups' RU/s.
func groupRows(gs []resource.GroupStats) []groupRow {
	var total float64
	for _, g := range gs {
		if g.RUPerSec > 0 {
			total += g.RUPerSec
		}
	}
	rows := make([]groupRow, len(gs))
	for i, g := range gs {
		rows[i].GroupStats = g
		if g.RUPerSec > 0 {
			s := g.RUPerSec / total
			rows[i].Share = &s
		}
	}
	return rows
}

// WriteText prints the groups as a table, after whether they schedule.
func (r *groupsReport) WriteText(w io.Writer) error {
	t := cli.NewTable(w)
	if r.ResourceControl {
		t.Println("resource control: on (reads are scheduled by group)")
	} else {
		t.Println("resource control: off (the groups are kept but do not schedule reads; open the store with kv.Options.ResourceControl)")
	}
	t.Println("NAME\tPRIORITY\tRU/S\tSHARE\tBURSTABLE\tRU LAST S\tRU TOTAL\tQUEUED\tRUNNING\tHELD\tTHROTTLED\tRUNAWAY\tRUNAWAY READS")
	for _, g := range r.Groups {
		share := "-"
		if g.Share != nil {
			share = percent(*g.Share)
		}
		runaway := "-"
		if g.Runaway != nil {
			runaway = g.Runaway.String()
		}
		reads := "-"
		if g.RunawayReads != nil {
			reads = runawayCounts(g.RunawayReads)
		}
		t.Printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n",
			g.Name, g.Priority, ruLimit(g.RUPerSec), share, yesNo(g.Burstable),
			ru(g.RULastSecond), ru(g.RU), g.Queued, g.Running, g.Held, shortDur(g.Throttled), runaway, reads)
	}
	for _, g := range r.RunawayUnlisted {
		t.Printf("runaway reads of %s, no longer a group: %s\n", strconv.Quote(g.Group), runawayCounts(&g))
	}
	if r.RunawayOtherGroups > 0 {
		t.Printf("runaway reads of groups not counted by name: %d\n", r.RunawayOtherGroups)
	}
	if r.Watches > 0 {
		t.Printf("live runaway watches: %d (kvctl groups watches)\n", r.Watches)
	}
	return t.Flush()
}

// runawayCounts renders a group's runaway reads for a table cell: the
// actions that caught any, "kill 2 (1 by watch)"; "0" for none.
func runawayCounts(g *resource.RunawayGroupStats) string {
	var parts []string
	for _, a := range []resource.RunawayAction{resource.RunawayDryRun, resource.RunawayCooldown, resource.RunawayKill} {
		if n := g.Count(a); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", a, n))
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	s := strings.Join(parts, ", ")
	if g.Watched > 0 {
		s += fmt.Sprintf(" (%d by watch)", g.Watched)
	}
	return s
}

// ruLimit renders a group's RU/s, 0 being unlimited.
func ruLimit(v float64) string {
	if v == 0 {
		return "unlimited"
	}
	return ru(v)
}

// ru renders request units to one decimal: RU are fractional, and a
// tenth is below what matters.
func ru(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// yesNo renders a flag for a table.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// newGroupsSetCmd builds "kvctl groups set" (PUT /groups/NAME); lf are
// the flags of its parent, groups.
func newGroupsSetCmd(out *output, lf *liveFlags) *cobra.Command {
	var (
		cfg      resource.GroupConfig
		priority string
		rf       runawayFlags
	)
	cmd := &cobra.Command{
		Use:   "set NAME --ru N [--burstable] [--priority low|medium|high] [--runaway-* ...]",
		Short: "Create or replace a resource group",
		Long: `set creates the resource group NAME, or replaces its whole config
(PUT /groups/NAME): a flag not given takes its default, not the group's
old value. It prints the config in force. Reads queued after it follow
the new config at once.

--ru is the group's share of the pool in request units per second and,
unless --burstable, its limit; 0 = unlimited. --priority is its class
(default medium).

The --runaway flags give the group a runaway rule (none without them; the
store applies it with resource control): a read of the group is runaway
once it has run longer than --runaway-exec of worker time (its steps, not
its wall time) or read more than --runaway-rows rows; --runaway-action
then applies to it — dryrun (counted and logged), cooldown (the lowest
priority from its next step) or kill (it ends at its next step). With
--runaway-watch, for that long new reads of the group with the same task
id, or without one the same start key, are runaway from their first step.
The store refuses negative or absurd values (a limit under 100µs or over
24h, a watch under 1s or over 24h).`,
		Example: `  kvctl groups set batch --ru 2000 --priority low
  kvctl groups set oltp --ru 500 --burstable --priority high
  kvctl groups set default --ru 0 --burstable --priority medium
  kvctl groups set batch --ru 2000 --runaway-exec 10ms --runaway-action kill --runaway-watch 1m
  kvctl groups set report --ru 100 --runaway-rows 1000000 --runaway-action cooldown`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Name = args[0]
			if cfg.Name == "" {
				return errEmptyGroup
			}
			p, err := resource.ParsePriority(priority)
			if err != nil {
				return fmt.Errorf("--priority: %w", err)
			}
			cfg.Priority = p
			if cfg.Runaway, err = rf.rule(cmd); err != nil {
				return err
			}
			c, err := lf.client()
			if err != nil {
				return err
			}
			defer c.close()
			ctx := cmd.Context()
			got, err := c.PutGroup(ctx, cfg)
			if err != nil {
				return cli.Interrupted(ctx, c.explain(err))
			}
			if err := out.print.Print(groupSet(got)); err != nil {
				return err
			}
			out.print.Note(func() string { return uncontrolledNote(ctx, c) })
			return nil
		},
	}
	cmd.Flags().Float64Var(&cfg.RUPerSec, "ru", 0, "request units per second: the group's share and, unless --burstable, its limit; 0 = unlimited")
	cmd.Flags().BoolVar(&cfg.Burstable, "burstable", false, "let the group exceed --ru when the pool has spare capacity")
	cmd.Flags().StringVar(&priority, "priority", "medium", "the group's class: low, medium or high")
	_ = cmd.MarkFlagRequired("ru") // the flag exists
	rf.add(cmd)
	return cmd
}

// runawayFlags are groups set's flags of the group's runaway rule.
type runawayFlags struct {
	exec, watch time.Duration
	rows        int64
	action      string
}

func (f *runawayFlags) add(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.exec, "runaway-exec", 0, "runaway past this much worker time (its steps, not its wall time); 0 = no limit")
	cmd.Flags().Int64Var(&f.rows, "runaway-rows", 0, "runaway past this many rows read; 0 = no limit")
	cmd.Flags().StringVar(&f.action, "runaway-action", "", "what befalls a runaway read: dryrun, cooldown or kill")
	cmd.Flags().DurationVar(&f.watch, "runaway-watch", 0, "for this long after, new reads of the same task id or start key are runaway from their start; 0 = no watch")
}

// rule is the rule the flags give, nil when none was given. The store
// judges the values; kvctl only reads the action's name.
func (f *runawayFlags) rule(cmd *cobra.Command) (*resource.RunawayRule, error) {
	given := false
	for _, name := range []string{"runaway-exec", "runaway-rows", "runaway-action", "runaway-watch"} {
		given = given || cmd.Flags().Changed(name)
	}
	if !given {
		return nil, nil
	}
	if f.action == "" {
		return nil, errors.New("--runaway-action is required with a runaway rule: dryrun, cooldown or kill")
	}
	a, err := resource.ParseRunawayAction(f.action)
	if err != nil {
		return nil, fmt.Errorf("--runaway-action: %w", err)
	}
	return &resource.RunawayRule{ExecElapsed: f.exec, RowsScanned: f.rows, Action: a, Watch: f.watch}, nil
}

// groupSet is groups set's result: the config in force.
type groupSet resource.GroupConfig

func (g groupSet) WriteText(w io.Writer) error {
	runaway := ""
	if g.Runaway != nil {
		runaway = ", runaway: " + g.Runaway.String()
	}
	_, err := fmt.Fprintf(w, "group %s: %s RU/s, burstable %s, priority %s%s\n",
		strconv.Quote(g.Name), ruLimit(g.RUPerSec), yesNo(g.Burstable), g.Priority, runaway)
	return err
}

// uncontrolledNote tells the operator who just configured a group that it
// will not schedule anything yet ("" when it will). It is a courtesy: a
// failure to ask is ignored.
func uncontrolledNote(ctx context.Context, c *adminClient) string {
	if a, err := c.Groups(ctx); err == nil && !a.ResourceControl {
		return "kvctl: note: resource control is off on this store; groups apply once it is opened with kv.Options.ResourceControl"
	}
	return ""
}

// newGroupsDeleteCmd builds "kvctl groups delete" (DELETE /groups/NAME).
func newGroupsDeleteCmd(out *output, lf *liveFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a resource group",
		Long: `delete removes the resource group NAME (DELETE /groups/NAME). Its reads,
and reads that name it later, run as the group "default", which cannot be
deleted.`,
		Example: `  kvctl groups delete batch`,
		Args:    exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == "" {
				return errEmptyGroup
			}
			var got groupDeleted
			if err := lf.call(cmd.Context(), "DELETE", "/groups/"+args[0], nil, &got); err != nil {
				return err
			}
			return out.print.Print(got)
		},
	}
}

// groupDeleted is groups delete's result: the endpoint's answer.
type groupDeleted admin.Deleted

func (g groupDeleted) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "deleted group %s\n", strconv.Quote(g.Deleted))
	return err
}

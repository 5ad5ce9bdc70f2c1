package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/resource"
)

// groupsScheduler is the scheduler the resource-group workloads run on:
// resource control.
const groupsScheduler = string(kv.SchedulerPriority)

// aloneSuffix ends the group name of the results of a group measured on
// its own, before the others join it.
const aloneSuffix = "-alone"

// The aims of the resource-group workloads, which the summary under the
// table marks ok or missed. They are the issue's, for a real run on an
// idle machine; tests do not assert them.
const (
	// ratioTolerance: two saturating groups' RU keep the ratio of their
	// shares, and a limited group consumes its limit, within ±10%.
	ratioTolerance = 0.10
	// aloneFactor: the alone group's p99 beside the others is at most
	// this many times its p99 alone.
	aloneFactor = 2.0
)

// groupsSpec is a resource-group workload: its groups, each with its
// clients, and what its summary checks.
type groupsSpec struct {
	tenants []tenant
	// alone names the tenant that first runs on its own (its results are
	// those of group alone+aloneSuffix), "" for none. The summary compares
	// its Get p99 there with its p99 beside the others.
	alone string
	// ratios are pairs of saturating tenants whose RU should keep the
	// ratio of their shares (RUPerSec).
	ratios [][2]string
}

// tenant is one resource group of a groups workload and what its clients
// do.
type tenant struct {
	cfg resource.GroupConfig
	// class is what its clients do, and the class of its results:
	// classGet, --clients goroutines doing point Gets on a fixed schedule
	// at --oltp-rate in all; classScan, --group-scanners goroutines
	// looping on scans.
	class   class
	scanLen int // classScan: keys per scan; 0 = --scan-len
}

// groupsWorkload is the resource-control workload: a
// latency-sensitive group beside two burstable batch groups of unequal
// shares and a limited one, the three of them saturating the pool.
//
// oltp is burstable: its Gets at the default --oltp-rate (~0.13 RU each,
// ~270 RU/s) stay within its 500 RU/s anyway, and a bucket would only add
// a throttle to the latency its p99 is meant to show.
func groupsWorkload() Workload {
	return &groupsLoad{
		plain: plain{
			name:  "groups",
			short: "resource groups sharing the pool: shares, a limit, a high-priority tenant",
			long: `groups measures resource control: four resource groups share the pool —
oltp (high priority, 500 RU/s, burstable) doing point Gets at --oltp-rate
from --clients goroutines on a fixed schedule, batch-a (3,000 RU/s) and
batch-b (1,000 RU/s), both burstable, and capped (200 RU/s, not
burstable), each with --group-scanners goroutines looping on scans of
--scan-len keys. oltp first runs alone (group "oltp-alone"), then beside
the others. Under the table kvbench prints each group's RU/s and share of
the total, batch-a : batch-b against 3 : 1, capped against its 200 RU/s,
and oltp's Get p99 alone and beside the others.

It runs once, with resource control, on the priority scheduler, whatever
--schedulers says; the store must have resource groups.`,
			classes: []class{classGet, classScan},
		},
		spec: groupsSpec{
			tenants: []tenant{
				{cfg: resource.GroupConfig{Name: "oltp", RUPerSec: 500, Burstable: true, Priority: resource.PriorityHigh}, class: classGet},
				{cfg: resource.GroupConfig{Name: "batch-a", RUPerSec: 3_000, Burstable: true, Priority: resource.PriorityMedium}, class: classScan},
				{cfg: resource.GroupConfig{Name: "batch-b", RUPerSec: 1_000, Burstable: true, Priority: resource.PriorityMedium}, class: classScan},
				{cfg: resource.GroupConfig{Name: "capped", RUPerSec: 200, Priority: resource.PriorityMedium}, class: classScan},
			},
			alone:  "oltp",
			ratios: [][2]string{{"batch-a", "batch-b"}},
		},
	}
}

// groupsStepsWorkload checks that groups keep their ratio whatever the
// lengths of their requests' steps: scans of 1,024 keys in one group,
// of 100 in the other, equal shares, both saturating.
func groupsStepsWorkload() Workload {
	return &groupsLoad{
		plain: plain{
			name:  "groups-steps",
			short: "two resource groups of equal shares, one with longer steps",
			long: `groups-steps runs scans of 1,024 keys and of 100 keys in two resource
groups of equal shares (--group-scanners goroutines each), which should
get equal RU.

It runs once, with resource control, on the priority scheduler, whatever
--schedulers says; the store must have resource groups.`,
			classes: []class{classScan},
		},
		spec: groupsSpec{
			tenants: []tenant{
				{cfg: resource.GroupConfig{Name: "scan-1024", RUPerSec: 1_000, Burstable: true, Priority: resource.PriorityMedium}, class: classScan, scanLen: 1_024},
				{cfg: resource.GroupConfig{Name: "scan-100", RUPerSec: 1_000, Burstable: true, Priority: resource.PriorityMedium}, class: classScan, scanLen: 100},
			},
			ratios: [][2]string{{"scan-1024", "scan-100"}},
		},
	}
}

// groupsLoad is a resource-group workload: its groups, each with its
// clients, and the flags those have.
type groupsLoad struct {
	plain
	spec     groupsSpec
	clients  clientsFlag // oltp's
	oltpRate float64     // oltp's point Gets per second, over its clients
	scanLen  scanLenFlag // a scanning tenant's keys per scan, unless its own
	scanners int         // scan goroutines per scanning group
}

// gets reports whether a tenant does Gets (--clients, --oltp-rate), scans
// reports whether one scans --scan-len keys.
func (w *groupsLoad) gets() bool {
	return slices.ContainsFunc(w.spec.tenants, func(t tenant) bool { return t.class == classGet })
}

func (w *groupsLoad) scans() bool {
	return slices.ContainsFunc(w.spec.tenants, func(t tenant) bool { return t.class == classScan && t.scanLen == 0 })
}

func (w *groupsLoad) Flags(fs *pflag.FlagSet) {
	if w.gets() {
		w.clients.add(fs, "the oltp group's client goroutines")
		fs.Float64Var(&w.oltpRate, "oltp-rate", 2_000, "the oltp group's point Gets per second, over --clients goroutines on a fixed schedule")
	}
	if w.scans() {
		w.scanLen.add(fs, "keys per scan of the scanning groups")
	}
	fs.IntVar(&w.scanners, "group-scanners", 64, "goroutines looping on scans in each scanning group; shares hold while groups are backlogged, "+
		"and with too few a group whose queue runs dry gives its share away (the pool is work-conserving)")
}

func (w *groupsLoad) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if w.gets() {
		errs = append(errs, w.clients.validate(1, ""))
		if !(w.oltpRate > 0) || math.IsInf(w.oltpRate, 0) {
			bad("--oltp-rate must be a positive number of Gets per second, not %v", w.oltpRate)
		} else if every := float64(max(w.clients.n, 1)) / w.oltpRate; every < 1e-6 || every > 3600 {
			// Each client's Gets are due every clients/rate seconds: below a
			// microsecond all at once (as --think 0), past an hour never.
			bad("--oltp-rate %v gives each of %d clients a Get due every %.3gs; give a rate for which that is between 1µs and 1h", w.oltpRate, max(w.clients.n, 1), every)
		}
	}
	if w.scans() {
		errs = append(errs, w.scanLen.validate())
	}
	if w.scanners < 1 {
		bad("--group-scanners must be at least 1, not %d", w.scanners)
	}
	return errors.Join(errs...)
}

// Schedulers: resource control, whatever the run asks for.
func (w *groupsLoad) Schedulers([]string) []string { return []string{groupsScheduler} }

// Setup creates the groups in st, which must have resource groups.
func (w *groupsLoad) Setup(st kv.Store) error {
	gs, ok := st.(groupStore)
	if !ok {
		return fmt.Errorf("%s needs a store with resource groups (a *kv.DB opened with resource control); this one has none", w.name)
	}
	for _, t := range w.spec.tenants {
		if err := gs.ResourceGroups().Put(t.cfg); err != nil {
			return err
		}
	}
	return nil
}

// Phases are, if it has a tenant that runs alone first, that tenant's
// warm-up and measured phase, then every tenant's. Each tenant's result
// in a measured phase carries its group (with aloneSuffix in the alone
// phase) and the RU/s the group consumed in that phase.
//
// A limited group's bucket refills while it is idle (the alone phase), so
// its first second back may use a second's worth more: the warm-up
// absorbs it, a run with --warmup 0 shows it in the group's RU/s.
func (w *groupsLoad) Phases() []Phase {
	var ps []Phase
	add := func(only string, warmStream, measureStream uint64) {
		label, suffix := w.name, ""
		if only != "" {
			label, suffix = label+" "+only+" alone", aloneSuffix
		}
		// A tenant's clients keep their random streams whichever phase
		// they run in.
		build := func(e *env) []client {
			var cs []client
			for k, t := range w.spec.tenants {
				if only == "" || t.cfg.Name == only {
					cs = append(cs, w.tenantClients(e, &t, k<<16)...)
				}
			}
			return cs
		}
		results := func(m *Measured) []Result {
			var rs []Result
			next := 0 // the first of the tenant's clients, in build's order
			for _, t := range w.spec.tenants {
				if only != "" && t.cfg.Name != only {
					continue
				}
				recs := m.recs[next : next+w.tenantClientCount(&t)]
				next += len(recs)
				r := newResult(m.workload, m.sched, t.class, t.cfg.Name+suffix, mergeRecorders(recs).summarize(t.class, m.elapsed))
				r.RUPerSec = m.ruPerSec[t.cfg.Name]
				rs = append(rs, r)
			}
			return rs
		}
		ps = append(ps,
			Phase{Section: w.name, Label: label, Warmup: true, Stream: warmStream, Clients: build},
			Phase{Section: w.name, Label: label, Stream: measureStream, Clients: build, Results: results, RU: true})
	}
	if w.spec.alone != "" {
		add(w.spec.alone, streamAloneWarmup, streamAloneMeasure)
	}
	add("", streamWarmup, streamMeasure)
	return ps
}

// Summarize prints its groups' RU/s and share of the total in the phase
// where they all ran, and how its aims fared.
func (w *groupsLoad) Summarize(out io.Writer, rep *Report) error {
	var rows []Result
	for _, r := range rep.Results {
		if r.Workload == w.name {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil // an interrupted run that did not get to it
	}
	var b strings.Builder
	w.spec.summarize(&b, w.name, rows)
	_, err := io.WriteString(out, b.String())
	return err
}

// tenantClientCount is how many clients tenantClients gives t.
func (w *groupsLoad) tenantClientCount(t *tenant) int {
	if t.class == classGet {
		return w.clients.n
	}
	return w.scanners
}

// tenantClients returns t's client loops for a phase of e, their random
// streams numbered from first, each making its reads in t's group.
func (w *groupsLoad) tenantClients(e *env, t *tenant, first int) []client {
	var cs []client
	if t.class == classGet {
		n := w.clients.n
		interval := time.Duration(float64(n) / w.oltpRate * float64(time.Second))
		for i := range n {
			cs = append(cs, pacedGets(e, first+i, oltpSchedule(interval, i, n)))
		}
	} else {
		n := t.scanLen
		if n == 0 {
			n = w.scanLen.n
		}
		for i := range w.scanners {
			r := e.rand(first + i)
			cs = append(cs, countRows(func(ctx context.Context, rows *int64) (class, error) {
				return classScan, scanRandom(ctx, e, r.Int64N, n, rows)
			}))
		}
	}
	for i, c := range cs {
		cs[i] = inGroup(t.cfg.Name, c)
	}
	return cs
}

// inGroup makes c's reads run in resource group group.
func inGroup(group string, c client) client {
	return func(ctx context.Context, rec *recorder) { c(kv.WithResourceGroup(ctx, group), rec) }
}

// oltpSchedule is the schedule of oltp's Get client i of n: one Get every
// interval, on a fixed schedule whatever --arrival says, the n clients
// staggered across it. Each Get is timed from when it was due (wrk2's
// correction), so that a Get kept waiting delays the ones after it and
// shows in their latency too.
//
// The schedule offers the same rate whatever the latency, so oltp alone
// and oltp beside the scans are asked for the same work and their p99s
// compare. It falls behind for good only if Gets take longer than
// interval on average, which high-priority Gets at the default rate (2 ms
// a client) do not.
func oltpSchedule(interval time.Duration, i, n int) schedule {
	return schedule{arrival: arrivalFixed, interval: interval, offset: interval * time.Duration(i) / time.Duration(n)}
}

// summarize writes the summary of the groups workload name, whose results
// are rows.
func (g *groupsSpec) summarize(b *strings.Builder, name string, rows []Result) {
	find := func(group string) Result {
		if i := slices.IndexFunc(rows, func(r Result) bool { return r.Group == group }); i >= 0 {
			return rows[i]
		}
		return Result{}
	}
	total := 0.0
	for _, t := range g.tenants {
		total += find(t.cfg.Name).RUPerSec
	}
	fmt.Fprintf(b, "\n%s: RU consumed per second of the measured phase, by group\n", name)
	table := [][]string{{"  group", "config", "RU/s", "share"}}
	for _, t := range g.tenants {
		ru := find(t.cfg.Name).RUPerSec
		table = append(table, []string{"  " + t.cfg.Name, describeGroup(t.cfg),
			fmt.Sprintf("%.0f", ru), fmt.Sprintf("%.1f%%", percent(ru, total))})
	}
	table = append(table, []string{"  total", "", fmt.Sprintf("%.0f", total), "100.0%"})
	writeAligned(b, table, 2)

	for _, p := range g.ratios {
		ta, tb := g.tenant(p[0]), g.tenant(p[1])
		a, c := find(p[0]).RUPerSec, find(p[1]).RUPerSec
		want := ta.cfg.RUPerSec / tb.cfg.RUPerSec
		got := a / c
		fmt.Fprintf(b, "  %s : %s = %.2f : 1, want %g : 1 ± %.0f%%: %s\n",
			p[0], p[1], got, want, ratioTolerance*100, verdict(within(got, want)))
	}
	for _, t := range g.tenants {
		if t.cfg.Burstable || t.cfg.RUPerSec == 0 {
			continue
		}
		got := find(t.cfg.Name).RUPerSec
		fmt.Fprintf(b, "  %s: %.0f RU/s = %.2f× its limit of %g RU/s, want 1 ± %.0f%%: %s\n",
			t.cfg.Name, got, got/t.cfg.RUPerSec, t.cfg.RUPerSec, ratioTolerance*100,
			verdict(within(got, t.cfg.RUPerSec)))
	}
	if g.alone != "" {
		t := g.tenant(g.alone)
		alone, beside := find(g.alone+aloneSuffix).P99us, find(g.alone).P99us
		factor := beside / alone
		fmt.Fprintf(b, "  %s %s p99: %s alone, %s beside the others = %.2f×, want ≤ %g×: %s\n",
			g.alone, t.class, formatMicros(alone), formatMicros(beside), factor, aloneFactor,
			verdict(alone > 0 && factor <= aloneFactor))
	}
}

// tenant returns the tenant of group name, which must be one of g's.
func (g *groupsSpec) tenant(name string) tenant {
	i := slices.IndexFunc(g.tenants, func(t tenant) bool { return t.cfg.Name == name })
	if i < 0 {
		panic("kvbench: no tenant " + name) // the workload table is wrong
	}
	return g.tenants[i]
}

// describeGroup is a group's config in a few words.
func describeGroup(c resource.GroupConfig) string {
	kind := "limited"
	if c.Burstable {
		kind = "burstable"
	}
	return fmt.Sprintf("%s, %g RU/s, %s", c.Priority, c.RUPerSec, kind)
}

// within reports whether got is within ratioTolerance of want.
func within(got, want float64) bool {
	return want > 0 && math.Abs(got/want-1) <= ratioTolerance
}

func percent(part, total float64) float64 {
	if total <= 0 {
		return 0
	}
	return part / total * 100
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "missed"
}

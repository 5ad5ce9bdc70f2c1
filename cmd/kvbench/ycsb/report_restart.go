package main

import (
	"fmt"
	"slices"
)

// The restart mode's tables: how fast each store ran at a phase's start
// against its steady pace (--timeline), and how long its reopen before
// each workload took (--reopen).

// warmTitle introduces the warm-up table.
const warmTitle = "Warm-up: first 5 s ÷ steady, and in brackets the ops/s of the first 5 s and the steady ops/s " +
	"(the median of the per-second rates of the whole seconds in the phase's second half; – where the phase was too short):"

// reopenTitle introduces the reopen table.
const reopenTitle = "Reopen before the workload, ms: close + open (the store's directory as it was, its in-process caches empty, the OS page cache as it was):"

// warmTable is each store's first5s ÷ steady in every phase, with the two
// figures; nil when no phase has a timeline.
func warmTable(res *results) *pivot {
	if !slices.ContainsFunc(res.Phases, func(ps phaseStats) bool { return ps.hasTimeline() }) {
		return nil
	}
	stores := res.storeNames()
	t := &pivot{header: append([]string{"phase"}, stores...)}
	for _, wl := range tableOrder(res) {
		row := []string{shortTitle(wl)}
		for _, s := range stores {
			cell := "–"
			if ps, ok := res.phase(s, wl); ok && (ps.First5s > 0 || ps.Steady > 0) {
				cell = fmt.Sprintf("%s (%s / %s)", warmRatio(ps), rateString(ps.First5s), rateString(ps.Steady))
			}
			row = append(row, cell)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// reopenTable is the time each store took to reopen before each
// workload; nil when none reopened.
func reopenTable(res *results) *pivot {
	if !slices.ContainsFunc(res.Phases, func(ps phaseStats) bool { return ps.Reopen != nil }) {
		return nil
	}
	stores := res.storeNames()
	t := &pivot{header: append([]string{"workload"}, stores...)}
	for _, wl := range tableOrder(res) {
		if wl == loadPhase {
			continue
		}
		row := []string{shortTitle(wl)}
		for _, s := range stores {
			cell := "–"
			if ps, ok := res.phase(s, wl); ok && ps.Reopen != nil {
				r := ps.Reopen
				cell = fmt.Sprintf("%s (%s + %s)", msCell(r.Sec()), msCell(r.CloseSec), msCell(r.OpenSec))
			}
			row = append(row, cell)
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// warmRatio is a phase's first5s ÷ steady, "–" without both.
func warmRatio(ps *phaseStats) string {
	if ps.First5s <= 0 || ps.Steady <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", ps.First5s/ps.Steady)
}

// rateString formats operations per second, in thousands from 1,000 on;
// "–" for none.
func rateString(r float64) string {
	switch {
	case r <= 0:
		return "–"
	case r >= 999.5: // what %.0f would print as 1000
		return fmt.Sprintf("%.1f k", r/1000)
	default:
		return fmt.Sprintf("%.0f", r)
	}
}

// reopenNote says in the tables' first line that the stores were reopened
// before each workload; "" when they were not.
func reopenNote(res *results) string {
	if !res.Reopen {
		return ""
	}
	return "; each store closed and opened again before each workload (--reopen)"
}

// msCell formats seconds as milliseconds, to a hundredth under 1 ms.
func msCell(sec float64) string {
	if ms := sec * 1e3; ms < 1 {
		return fmt.Sprintf("%.2f", ms)
	}
	return fmt.Sprintf("%.1f", sec*1e3)
}

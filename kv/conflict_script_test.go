package kv

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestConflictLog_Scripts runs the conflict log's scripts in
// testdata/conflict: each drives one log as the oracle would, with no lock
// and no goroutine, and states what it answers and holds, so that a change
// of the rules shows as a changed script (go test ./kv -run
// TestConflictLog_Scripts -rewrite, then read the diff).
//
//	new [limit=N]                      a fresh log (limit: its bytes)
//	begin name=t                       t opens; prints its start
//	end name=t                         t closes
//	record keys=a,b [ranges=a-c,d-]    a write applied under the lock; prints
//	                                   its sequence (ranges: DeleteRanges,
//	                                   "d-" open-ended)
//	inflight name=w keys=.. [ranges=..] a write recorded, to be applied
//	                                   after the lock; prints its sequence
//	done name=w                        w is applied
//	conflicts name=t [keys=..] [ranges=..]
//	                                   whether t, having read keys and
//	                                   scanned ranges, conflicts at commit
//	state                              the log: sequence, open starts,
//	                                   writes in flight, floor, records,
//	                                   bytes
func TestConflictLog_Scripts(t *testing.T) {
	datadriven.Walk(t, "testdata/conflict", func(t *testing.T, path string) {
		var s conflictScript
		datadriven.RunTest(t, path, s.run)
	})
}

// conflictScript is one script's log and its named starts and writes.
type conflictScript struct {
	l     *conflictLog
	names map[string]uint64
}

func (s *conflictScript) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && s.l == nil {
		d.Fatalf(t, "%s before new", d.Cmd)
	}
	switch d.Cmd {
	case "new":
		s.l, s.names = &conflictLog{}, map[string]uint64{}
		d.MaybeScanArgs(t, "limit", &s.l.limit)
		return ""
	case "begin":
		start := s.l.begin()
		s.names[s.name(t, d, false)] = start
		return fmt.Sprintf("start=%d", start)
	case "end":
		s.l.end(s.names[s.name(t, d, true)])
		return ""
	case "record":
		return fmt.Sprintf("seq=%d", s.l.record(s.writes(t, d)))
	case "inflight":
		seq := s.l.recordInFlight(s.writes(t, d))
		s.names[s.name(t, d, false)] = seq
		return fmt.Sprintf("seq=%d", seq)
	case "done":
		s.l.done(s.names[s.name(t, d, true)])
		return ""
	case "conflicts":
		var r readSet
		for _, k := range s.list(t, d, "keys") {
			r.addKey([]byte(k))
		}
		for _, sp := range s.spans(t, d) {
			r.addRange(sp)
		}
		return fmt.Sprint(s.l.conflicts(s.names[s.name(t, d, true)], &r))
	case "state":
		return s.state()
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

// name is the name argument; known says it must have been given before.
func (s *conflictScript) name(t *testing.T, d *datadriven.TestData, known bool) string {
	var n string
	d.ScanArgs(t, "name", &n)
	if _, ok := s.names[n]; known && !ok {
		d.Fatalf(t, "unknown name %q", n)
	}
	return n
}

func (s *conflictScript) list(t *testing.T, d *datadriven.TestData, key string) []string {
	var v string
	d.MaybeScanArgs(t, key, &v)
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// spans are the ranges argument: start-end, an empty end open.
func (s *conflictScript) spans(t *testing.T, d *datadriven.TestData) []span {
	var out []span
	for _, r := range s.list(t, d, "ranges") {
		start, end, ok := strings.Cut(r, "-")
		if !ok {
			d.Fatalf(t, "range %q is not start-end", r)
		}
		out = append(out, spanOf(start, end))
	}
	return out
}

func (s *conflictScript) writes(t *testing.T, d *datadriven.TestData) writeSet {
	return writeSet{keys: keysOf(s.list(t, d, "keys")...), ranges: s.spans(t, d)}
}

func (s *conflictScript) state() string {
	var open []string
	for _, st := range slices.Sorted(maps.Keys(s.l.open)) {
		open = append(open, fmt.Sprintf("%d×%d", st, s.l.open[st]))
	}
	var recs []string
	for _, c := range s.l.commits {
		var w []string
		for _, k := range c.w.keys {
			w = append(w, string(k))
		}
		for _, r := range c.w.ranges {
			w = append(w, string(r.start)+"-"+string(r.end))
		}
		recs = append(recs, fmt.Sprintf("%d:%s", c.seq, strings.Join(w, ",")))
	}
	return fmt.Sprintf("seq=%d open=[%s] inflight=%v floor=%d\nrecords=[%s] bytes=%d",
		s.l.seq, strings.Join(open, " "), s.l.inflight, s.l.floor, strings.Join(recs, " "), s.l.bytes)
}

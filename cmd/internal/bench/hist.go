package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// class is a kind of operation, reported apart from the others.
type class int

const (
	classGet class = iota
	classScan
	classUpdate
	classCop
	classMultiGet // one MultiGet of --multiget-keys keys
	classGets     // as many Gets of the same keys, one after another
	classTransfer // one transfer between two accounts in a transaction (txn)
	classFullScan // a scan of the whole store (runaway)
	classRefused  // a paced Get refused for its estimated wait (--max-queue-wait): its service time
	classExpired  // a Get of a key that has expired (ttl): an error if it returns a value
	numClasses
)

var classNames = [numClasses]string{"get", "scan", "update", "cop", "multiget", "gets", "transfer", "full scan", "get refused", "expired get"}

func (c class) String() string { return classNames[c] }

// The histograms' range: latencies are recorded in nanoseconds with three
// significant digits, and clamped into [histMin, histMax] so that an
// outlier is counted at the edge instead of dropped.
const (
	histMin    = int64(1)
	histMax    = int64(time.Hour)
	histDigits = 3
)

// classStats is what one client (or, merged, every client) saw of one
// class: the latencies of the operations that succeeded and the count of
// those that failed; and, for paced Gets (see pacedGets), their service
// times and the rate they were offered at.
type classStats struct {
	hist     *hdrhistogram.Histogram
	errors   int64
	firstErr error // kept to tell the user what went wrong

	// The paced Gets' figures, zero for other classes. hist holds their
	// latencies from when each was due, service from its call to its
	// return.
	arrival string                  // the clients' --arrival
	offered float64                 // Gets per second asked for, summed over the clients; +Inf: unbounded
	service *hdrhistogram.Histogram // nil unless paced
	// late is each Get's call after its due time (e2e − service): the
	// client's wait to run, Go's scheduler's share, before the store sees
	// the Get. Nil unless paced.
	late *hdrhistogram.Histogram
	// overdue counts the Gets the phase's end cut off: due by then but not
	// served. hist holds each one's latency so far (a lower bound), so that
	// a stall at the very end shows in the latency as one earlier does;
	// they are not operations.
	overdue int64

	// rows counts the rows the class's operations read (scans: see
	// countRows), those of an operation the phase's end cut off included,
	// so that a scan longer than the phase still shows its progress.
	rows int64

	// The transactions' figures (see transferClient), zero for other
	// classes. txn marks a class of transactions, whose results report
	// the next two, zero or not: retries counts the attempts run again
	// after a conflict, failures the transactions that ended in one
	// (kv.Update gave up). Each is a kv.ErrConflict that an attempt met.
	// Neither is an operation, nor an error: hist and errors count the
	// transactions that committed and those that failed otherwise.
	txn      bool
	retries  int64
	failures int64
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, histDigits) }

func newClassStats() *classStats { return &classStats{hist: newHist()} }

// recorder collects one client goroutine's operations. hdrhistogram is
// not safe for concurrent use, so each client has its own recorder and the
// recorders are merged when the phase is over.
type recorder struct {
	classes [numClasses]*classStats // nil until the class is recorded
}

// stats returns c's figures, made on first use.
func (r *recorder) stats(c class) *classStats {
	cs := r.classes[c]
	if cs == nil {
		cs = newClassStats()
		r.classes[c] = cs
	}
	return cs
}

// record counts one operation of class c that took d, or failed with err.
func (r *recorder) record(c class, d time.Duration, err error) {
	cs := r.stats(c)
	if err != nil {
		cs.errors++
		if cs.firstErr == nil {
			cs.firstErr = err
		}
		return
	}
	recordClamped(cs.hist, d)
}

// pace makes class c paced Gets, from a client that asks for rate of them
// per second (+Inf: back to back) under arrival, before it records any:
// a class whose Gets all stall still reports the rate it was offered.
func (r *recorder) pace(c class, arrival string, rate float64) {
	cs := r.stats(c)
	cs.arrival = arrival
	cs.offered += rate
	if cs.service == nil {
		cs.service, cs.late = newHist(), newHist()
	}
}

// recordPaced counts one paced Get of class c (see pace): e2e from when it
// was due to its return, service from its call, or its failure err.
func (r *recorder) recordPaced(c class, e2e, service time.Duration, err error) {
	r.record(c, e2e, err)
	if cs := r.classes[c]; err == nil && cs.service != nil {
		recordClamped(cs.service, service)
		recordClamped(cs.late, e2e-service)
	}
}

// addRows counts n rows read by an operation of class c.
func (r *recorder) addRows(c class, n int64) {
	if n > 0 {
		r.stats(c).rows += n
	}
}

// transact makes class c transactions (see classStats.txn) before it
// records any, so that a class that met no conflict reports zero.
func (r *recorder) transact(c class) { r.stats(c).txn = true }

// retry counts an attempt of a transaction of class c run again after
// a conflict.
func (r *recorder) retry(c class) { r.stats(c).retries++ }

// giveUp counts a transaction of class c that ended in a conflict.
func (r *recorder) giveUp(c class) { r.stats(c).failures++ }

// recordOverdue counts a paced Get of class c that was due e2e before the
// phase ended and was not served by then (see classStats.overdue).
func (r *recorder) recordOverdue(c class, e2e time.Duration) {
	cs := r.stats(c)
	recordClamped(cs.hist, e2e)
	cs.overdue++
}

// recordClamped records d in h, clamped into h's range so that an outlier
// is counted at the edge. Out of range is then impossible, so the error
// is nil.
func recordClamped(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(int64(d), histMin), histMax))
}

// mergeRecorders returns, per class, the sum of what recs saw.
func mergeRecorders(recs []*recorder) *recorder {
	out := &recorder{}
	for _, r := range recs {
		for c, cs := range r.classes {
			if cs == nil {
				continue
			}
			m := out.stats(class(c))
			m.hist.Merge(cs.hist) // same range: nothing is dropped
			m.errors += cs.errors
			m.overdue += cs.overdue
			m.rows += cs.rows
			m.txn = m.txn || cs.txn
			m.retries += cs.retries
			m.failures += cs.failures
			if m.firstErr == nil {
				m.firstErr = cs.firstErr
			}
			if cs.service != nil {
				if m.service == nil {
					m.service, m.late = newHist(), newHist()
				}
				m.service.Merge(cs.service)
				m.late.Merge(cs.late)
				m.arrival = cs.arrival
				m.offered += cs.offered
			}
		}
	}
	return out
}

// percentiles are a latency histogram's figures.
type percentiles struct {
	p50, p99, p999, max time.Duration
}

// percentilesOf returns h's figures; zero if h is empty.
func percentilesOf(h *hdrhistogram.Histogram) percentiles {
	if h.TotalCount() == 0 {
		return percentiles{}
	}
	return percentiles{
		p50:  time.Duration(h.ValueAtQuantile(50)),
		p99:  time.Duration(h.ValueAtQuantile(99)),
		p999: time.Duration(h.ValueAtQuantile(99.9)),
		max:  time.Duration(h.Max()),
	}
}

// summary is a class's figures over one measured phase.
type summary struct {
	ops       int64
	opsPerSec float64
	percentiles
	errors   int64
	firstErr error

	// For paced Gets (arrival set): percentiles are from when each Get
	// was due, service from its call; offered is the Gets per second the
	// clients asked for, +Inf if unbounded.
	arrival string
	offered float64
	service percentiles
	late    percentiles // the calls' lateness (classStats.late)
	overdue int64

	// rows is what the class's operations read in rows (classStats.rows),
	// rowsPerSec that per second of the phase.
	rows       int64
	rowsPerSec float64

	// For transactions (txn set): retries and failures as counted
	// (classStats), conflicts their sum, conflictsPerSec those per
	// second of the phase.
	txn               bool
	retries, failures int64
	conflicts         int64
	conflictsPerSec   float64
}

// summarize returns c's figures for a phase that lasted elapsed; a class
// that was never recorded has zero ops.
func (r *recorder) summarize(c class, elapsed time.Duration) summary {
	cs := r.classes[c]
	if cs == nil {
		return summary{}
	}
	h := cs.hist
	s := summary{ops: h.TotalCount() - cs.overdue, errors: cs.errors, firstErr: cs.firstErr, percentiles: percentilesOf(h), overdue: cs.overdue,
		rows: cs.rows, txn: cs.txn, retries: cs.retries, failures: cs.failures, conflicts: cs.retries + cs.failures}
	if elapsed > 0 {
		s.opsPerSec = float64(s.ops) / elapsed.Seconds()
		s.rowsPerSec = float64(s.rows) / elapsed.Seconds()
		s.conflictsPerSec = float64(s.conflicts) / elapsed.Seconds()
	}
	if cs.service != nil {
		s.arrival, s.offered, s.service, s.late = cs.arrival, cs.offered, percentilesOf(cs.service), percentilesOf(cs.late)
	}
	return s
}

package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecorder_Summarize(t *testing.T) {
	r := &recorder{}
	for i := 1; i <= 1000; i++ {
		r.record(classGet, time.Duration(i)*time.Microsecond, nil)
	}
	s := r.summarize(classGet, 2*time.Second)
	assert.Equal(t, int64(1000), s.ops)
	assert.InDelta(t, 500.0, s.opsPerSec, 1e-9)
	// Three significant digits: within 0.1%.
	assert.InEpsilon(t, 500*time.Microsecond, s.p50, 0.001)
	assert.InEpsilon(t, 990*time.Microsecond, s.p99, 0.001)
	assert.InEpsilon(t, 999*time.Microsecond, s.p999, 0.001)
	assert.InEpsilon(t, 1000*time.Microsecond, s.max, 0.001)
	assert.Zero(t, s.errors)

	assert.Equal(t, summary{}, r.summarize(classScan, time.Second), "a class never recorded has nothing")
}

func TestRecorder_ErrorsAreCountedNotTimed(t *testing.T) {
	r := &recorder{}
	first := errors.New("first")
	r.record(classScan, time.Hour, first)
	r.record(classScan, time.Hour, errors.New("second"))
	r.record(classScan, time.Millisecond, nil)
	s := r.summarize(classScan, time.Second)
	assert.Equal(t, int64(1), s.ops)
	assert.Equal(t, int64(2), s.errors)
	assert.Same(t, first, s.firstErr)
	assert.InEpsilon(t, time.Millisecond, s.max, 0.001)
}

func TestRecorder_ClampsIntoRange(t *testing.T) {
	r := &recorder{}
	r.record(classGet, -time.Second, nil)
	r.record(classGet, 0, nil)
	r.record(classGet, 100*time.Hour, nil)
	s := r.summarize(classGet, time.Second)
	assert.Equal(t, int64(3), s.ops, "nothing is dropped")
	assert.InEpsilon(t, time.Hour, s.max, 0.001)
	assert.Equal(t, histMin, r.classes[classGet].hist.Min())
}

func TestMergeRecorders(t *testing.T) {
	a, b, c := &recorder{}, &recorder{}, &recorder{}
	for i := range 100 {
		a.record(classGet, time.Duration(i+1)*time.Microsecond, nil)
		b.record(classGet, time.Duration(i+101)*time.Microsecond, nil)
	}
	b.record(classUpdate, time.Millisecond, nil)
	errB := errors.New("b")
	b.record(classGet, 0, errB)
	c.record(classGet, 0, errors.New("c"))

	m := mergeRecorders([]*recorder{a, b, c})
	s := m.summarize(classGet, time.Second)
	assert.Equal(t, int64(200), s.ops)
	assert.Equal(t, int64(2), s.errors)
	assert.Same(t, errB, s.firstErr, "the first error in client order")
	assert.InEpsilon(t, 100*time.Microsecond, s.p50, 0.001)
	assert.InEpsilon(t, 200*time.Microsecond, s.max, 0.001)
	assert.Equal(t, int64(1), m.summarize(classUpdate, time.Second).ops)
	assert.Nil(t, m.classes[classScan])

	require.Equal(t, int64(100), a.summarize(classGet, time.Second).ops, "the inputs are left as they were")
}

func TestClass_Names(t *testing.T) {
	var names []string
	for c := range numClasses {
		names = append(names, c.String())
	}
	assert.Equal(t, []string{"get", "scan", "update", "cop", "multiget", "gets", "transfer", "full scan", "get refused", "expired get"}, names)
}

func TestRecorder_Paced(t *testing.T) {
	a, b, idle := &recorder{}, &recorder{}, &recorder{}
	a.pace(classGet, arrivalFixed, 5000)
	b.pace(classGet, arrivalFixed, 5000)
	idle.pace(classGet, arrivalFixed, 5000)
	for i := 1; i <= 100; i++ {
		a.recordPaced(classGet, time.Duration(i)*time.Millisecond, time.Duration(i)*time.Microsecond, nil)
	}
	b.recordPaced(classGet, time.Hour, time.Hour, errors.New("busy"))

	s := mergeRecorders([]*recorder{a, b, idle}).summarize(classGet, time.Second)
	assert.Equal(t, int64(100), s.ops)
	assert.Equal(t, int64(1), s.errors, "a failed Get is counted, not timed")
	assert.Equal(t, arrivalFixed, s.arrival)
	assert.InDelta(t, 15_000.0, s.offered, 1e-9, "the clients' rates add up, a client that recorded nothing too")
	assert.InEpsilon(t, 50*time.Millisecond, s.p50, 0.001, "the latencies are e2e")
	assert.InEpsilon(t, 100*time.Millisecond, s.max, 0.001)
	assert.InEpsilon(t, 50*time.Microsecond, s.service.p50, 0.001)
	assert.InEpsilon(t, 99*time.Microsecond, s.service.p99, 0.001)
	assert.InEpsilon(t, 100*time.Microsecond, s.service.max, 0.001)
	assert.InEpsilon(t, 50*time.Millisecond-50*time.Microsecond, s.late.p50, 0.001, "late: e2e less service")
	assert.InEpsilon(t, 100*time.Millisecond-100*time.Microsecond, s.late.max, 0.001)

	s = idle.summarize(classGet, time.Second)
	assert.Zero(t, s.ops)
	assert.Equal(t, 5000.0, s.offered, "a client whose Gets all stalled still offered them")
	assert.Equal(t, percentiles{}, s.service)

	r := &recorder{}
	r.record(classGet, time.Millisecond, nil)
	s = r.summarize(classGet, time.Second)
	assert.Empty(t, s.arrival, "a class not paced has no pacing")
	assert.Zero(t, s.offered)
}

// TestRecorder_Rows: the rows a class read add up across clients and
// give rows per second of the phase, ops or no ops.
func TestRecorder_Rows(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	a.record(classScan, time.Millisecond, nil)
	a.addRows(classScan, 300)
	b.addRows(classScan, 100) // a scan the phase's end cut off: rows, no op
	b.addRows(classGet, 0)
	m := mergeRecorders([]*recorder{a, b})
	s := m.summarize(classScan, 2*time.Second)
	assert.Equal(t, int64(1), s.ops)
	assert.Equal(t, int64(400), s.rows)
	assert.InDelta(t, 200.0, s.rowsPerSec, 1e-9)
	assert.Nil(t, m.classes[classGet], "no rows, no class")
}

// TestRecorder_Txns: retries and failures add up across clients, a
// client that met no conflict (or did nothing) included, and give the
// conflicts; failures are neither operations nor errors.
func TestRecorder_Txns(t *testing.T) {
	a, b, idle := &recorder{}, &recorder{}, &recorder{}
	for _, r := range []*recorder{a, b, idle} {
		r.transact(classTransfer)
	}
	a.record(classTransfer, time.Millisecond, nil)
	a.retry(classTransfer)
	a.retry(classTransfer)
	for range 9 {
		b.retry(classTransfer)
	}
	b.giveUp(classTransfer)
	b.record(classTransfer, time.Millisecond, errors.New("kv: busy"))
	s := mergeRecorders([]*recorder{a, b, idle}).summarize(classTransfer, 2*time.Second)
	assert.True(t, s.txn)
	assert.Equal(t, [5]int64{1, 1, 11, 1, 12}, [5]int64{s.ops, s.errors, s.retries, s.failures, s.conflicts},
		"ops, errors, retries, failures, conflicts")
	assert.InDelta(t, 6.0, s.conflictsPerSec, 1e-9)

	s = idle.summarize(classTransfer, time.Second)
	assert.True(t, s.txn, "transactions that met no conflict are still transactions")
	assert.Zero(t, s.conflicts)

	r := &recorder{}
	r.record(classGet, time.Millisecond, nil)
	assert.False(t, r.summarize(classGet, time.Second).txn, "a class of no transactions")
}

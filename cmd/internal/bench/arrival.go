package bench

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/coopkv/coopkv/kv"
)

// Paced Gets: when a client's Gets are due (--arrival), and the client
// that sends them on that schedule, measuring each from when it was due.

// The --arrival values: when a paced Get client's Gets are due.
const (
	// arrivalFixed: on a schedule of the client's own, one Get every
	// interval, whatever the Gets take (wrk2's correction of coordinated
	// omission).
	arrivalFixed = "fixed"
	// arrivalThink: an interval after the client's previous Get returned
	// (a closed loop with think times: a slow store gets fewer Gets).
	arrivalThink = "think"
)

// arrivals are the --arrival values, the default first.
var arrivals = []string{arrivalFixed, arrivalThink}

// offsetStream is the random sub-stream of a Get client's schedule offset.
const offsetStream = 1

// schedule is when a paced Get client's Gets are due: a pure function of
// the client's start, testable without a clock.
type schedule struct {
	arrival  string        // arrivalFixed or arrivalThink
	interval time.Duration // between two Gets due (fixed) or after one returned (think)
	offset   time.Duration // Get 0 is due this long after the client starts
	// maxWait is --max-queue-wait: each Get carries it (kv.WithMaxQueueWait),
	// and one refused for it is recorded as classRefused; 0 = none.
	maxWait time.Duration
}

// due returns when Get n of a client that started at start is due, where
// prev is when its Get n-1 returned (think arrival only). Under fixed
// arrival Get n is due at start + offset + n × interval however late the
// client runs: it issues every Get, a late one at once, and the Get's
// latency counts from here.
func (s schedule) due(start time.Time, n int64, prev time.Time) time.Time {
	switch {
	case n == 0:
		return start.Add(s.offset)
	case s.arrival == arrivalThink:
		return prev.Add(s.interval)
	default:
		return start.Add(s.offset + time.Duration(n)*s.interval)
	}
}

// rate is the Gets per second the schedule asks for (+Inf if interval is
// 0): what it offers under fixed arrival, the most it can get under think.
func (s schedule) rate() float64 {
	if s.interval <= 0 {
		return math.Inf(1)
	}
	return float64(time.Second) / float64(s.interval)
}

// getSchedule is the schedule of Get client i of f's: one Get every
// --think. Under fixed arrival the client's phase, the offset of its Get
// 0, is drawn from r in [0, --think), so that the clients do not fire
// together (the same --seed, the same phases); under think arrival the
// clients are staggered evenly across --think, as they always were.
func getSchedule(f *besideFlags, r *rand.Rand, i int) schedule {
	s := schedule{arrival: f.arrival, interval: f.think, maxWait: f.maxWait}
	switch {
	case f.arrival == arrivalThink:
		s.offset = f.think * time.Duration(i) / time.Duration(f.clients.n)
	case f.think > 0:
		s.offset = time.Duration(r.Int64N(int64(f.think)))
	}
	return s
}

// spinWithin is how close to a Get's due time sleepUntil stops sleeping on
// its timer and yields the processor in a loop instead. Go's timers are too
// coarse for a 200 µs schedule: when the Ps have nothing else to run, the
// runtime waits for the next timer in epoll_wait, whose timeout is in
// whole milliseconds, so a 200 µs sleep takes about 1 ms, and even a 2 ms
// one ends some 300 µs late on Linux. Waking 2 ms early and yielding until
// the due time is typically within a microsecond when a P is free. The
// spinning costs a P only while nothing else wants it (runtime.Gosched
// lets every runnable goroutine go first), but a client whose interval is
// under spinWithin never sleeps: it keeps a core busy when the store is
// idle.
const spinWithin = 2 * time.Millisecond

// sleepUntil waits until due — on timer while it is more than spinWithin
// away, then yielding — and reports false when ctx ends first: the paced
// clients' wait for their next Get.
func sleepUntil(ctx context.Context, timer *time.Timer, due time.Time) bool {
	if wait := time.Until(due) - spinWithin; wait > 0 {
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
	}
	for ctx.Err() == nil && time.Now().Before(due) {
		runtime.Gosched()
	}
	return ctx.Err() == nil
}

// pacedGets returns a Get client with random stream stream: point Gets due
// as s says, each recorded twice — its latency from when it was due to its
// return, and its service time from its call to its return.
//
// Timing a Get from when it was due, not from when the client got to issue
// it, keeps the store's stalls in the figures: a client kept off its P
// (Go preempts only every 10 ms) or behind its schedule shows it in the
// latency. Under fixed arrival a store slower than the schedule gets as
// many Gets as a fast one, and its falling behind shows as latency that
// grows for the rest of the phase and an achieved rate below the offered
// one; under think arrival a slow store is simply asked for fewer Gets
// ("coordinated omission"), and only the service time and the achieved
// rate show it. Gets the phase's end cuts off — due but not served — are
// counted as overdue, their latency so far in the figures, so that a stall
// at the very end shows as one earlier does.
func pacedGets(e *env, stream int, s schedule) client {
	r := e.rand(stream)
	buf := make([]byte, 0, keyLen)
	return func(ctx context.Context, rec *recorder) {
		rec.pace(classGet, s.arrival, s.rate())
		if s.maxWait > 0 {
			ctx = kv.WithMaxQueueWait(ctx, s.maxWait)
		}
		timer := time.NewTimer(0)
		defer timer.Stop()
		start := time.Now()
		var end time.Time
		// cutOff records, at the phase's end, Get n due at due and those
		// after it that were due by then, as overdue (recorder.recordOverdue).
		cutOff := func(n int64, due time.Time) {
			now := time.Now()
			for ; !due.After(now); n++ {
				rec.recordOverdue(classGet, now.Sub(due))
				if s.arrival != arrivalFixed {
					return // the next one is due only after this one returns
				}
				due = s.due(start, n+1, end)
			}
		}
		for n := int64(0); ; n++ {
			due := s.due(start, n, end)
			if !sleepUntil(ctx, timer, due) {
				cutOff(n, due)
				return
			}
			call := time.Now()
			err := get(ctx, e.db, buf, r.Int64N(e.keys.count()))
			end = time.Now()
			if ctx.Err() != nil {
				cutOff(n, due)
				return
			}
			e2e, service := end.Sub(due), end.Sub(call)
			if s.maxWait > 0 && errors.Is(err, kv.ErrBusy) {
				// Refused at once for its estimated wait: the caller's cost
				// of the answer is its service time.
				rec.record(classRefused, service, nil)
			}
			rec.recordPaced(classGet, e2e, service, err)
			if hook := e.cfg.onPacedGet; hook != nil {
				hook(e2e, service)
			}
		}
	}
}

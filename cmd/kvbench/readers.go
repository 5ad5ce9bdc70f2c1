package main

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"time"
)

// getWorkload is uniform random point Gets from --clients goroutines, back
// to back: the pool's cost per read.
func getWorkload() *workload {
	return &workload{
		name:    "get",
		classes: []class{classGet},
		clients: func(e *env) []client {
			cs := make([]client, e.cfg.clients)
			for i := range cs {
				r := e.rand(i)
				buf := make([]byte, 0, keyLen)
				cs[i] = closedLoop(func(ctx context.Context) (class, error) {
					return classGet, get(ctx, e.db, buf, r.Int64N(e.keys.count()))
				})
			}
			return cs
		},
	}
}

// multiGetWorkload is, from --clients goroutines back to back, MultiGets
// of --multiget-keys uniform random keys (class "multiget", the even
// clients) and the same keys read by as many Gets one after another
// (class "gets", the odd clients): clients 2i and 2i+1 draw the same key
// sets, and each class's ops/s counts sets of keys read, so the two
// compare directly.
func multiGetWorkload() *workload {
	return &workload{
		name:    "multiget",
		classes: []class{classMultiGet, classGets},
		clients: func(e *env) []client {
			cs := make([]client, e.cfg.clients)
			for i := range cs {
				r := e.rand(i / 2)
				keys := make([][]byte, e.cfg.multiGetKeys)
				draw := func() {
					for j := range keys {
						keys[j] = appendKey(keys[j][:0], r.Int64N(e.keys.count()))
					}
				}
				if i%2 == 0 {
					cs[i] = closedLoop(func(ctx context.Context) (class, error) {
						draw()
						_, err := e.db.MultiGet(ctx, keys)
						return classMultiGet, err
					})
					continue
				}
				cs[i] = closedLoop(func(ctx context.Context) (class, error) {
					draw()
					for _, k := range keys {
						if _, err := e.db.Get(ctx, k); err != nil {
							return classGets, err
						}
					}
					return classGets, nil
				})
			}
			return cs
		},
	}
}

// scanWorkload is range scans of --scan-len keys from uniform random
// starts, from --clients goroutines, back to back.
func scanWorkload() *workload {
	return &workload{
		name:    "scan",
		classes: []class{classScan},
		clients: func(e *env) []client {
			cs := make([]client, e.cfg.clients)
			for i := range cs {
				r := e.rand(i)
				cs[i] = closedLoop(func(ctx context.Context) (class, error) {
					return classScan, scanRandom(ctx, e, r.Int64N, e.cfg.scanLen)
				})
			}
			return cs
		},
	}
}

// scanRandom scans n keys (at most every key) from a start drawn by
// int64n, so that the scan reads n keys whatever the start.
func scanRandom(ctx context.Context, e *env, int64n func(int64) int64, n int) error {
	count := e.keys.count()
	n = int(min(int64(n), count))
	start := int64n(count - int64(n) + 1)
	return scan(ctx, e.db, start, n, int64(n))
}

// noisyWorkload is the headline case: --scanners goroutines loop on long
// scans while --clients goroutines do point Gets at a steady rate. It shows
// whether short reads stay fast beside long ones. Its quiet phase, the
// same Gets without the scans, is what their p99 beside the scans is
// judged against (see writeNoisySummaries).
func noisyWorkload() *workload {
	return &workload{
		name:    "noisy",
		classes: []class{classGet, classScan},
		clients: func(e *env) []client {
			return getsBeside(e, func(ctx context.Context, e *env, int64n func(int64) int64) (class, error) {
				return classScan, scanRandom(ctx, e, int64n, e.cfg.longScanLen)
			})
		},
		quiet: pacedGetClients,
	}
}

// getsBeside returns noisy's clients with long as the long read: --clients
// goroutines doing paced Gets (pacedGets) on the schedules of --arrival
// (getSchedule) and --scanners goroutines looping on long, each with a
// random stream of its own, from which long draws its start.
func getsBeside(e *env, long func(ctx context.Context, e *env, int64n func(int64) int64) (class, error)) []client {
	cs := pacedGetClients(e)
	for i := range e.cfg.scanners {
		r := e.rand(e.cfg.clients + i)
		cs = append(cs, closedLoop(func(ctx context.Context) (class, error) { return long(ctx, e, r.Int64N) }))
	}
	return cs
}

// pacedGetClients returns noisy's Get clients: --clients goroutines doing
// paced Gets (pacedGets) on the schedules of --arrival (getSchedule), with
// random streams 0 to --clients-1.
func pacedGetClients(e *env) []client {
	cs := make([]client, e.cfg.clients)
	for i := range cs {
		// The phase comes from a stream apart from the client's keys', so
		// that --arrival does not change which keys it reads.
		cs[i] = pacedGets(e, i, getSchedule(e.cfg, newRand(e.seed, uint64(i), offsetStream), i))
	}
	return cs
}

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

// getSchedule is noisy's Get client i's schedule: one Get every --think.
// Under fixed arrival the client's phase, the offset of its Get 0, is
// drawn from r in [0, --think), so that the clients do not fire together
// (the same --seed, the same phases); under think arrival the clients are
// staggered evenly across --think, as they always were.
func getSchedule(cfg *config, r *rand.Rand, i int) schedule {
	s := schedule{arrival: cfg.arrival, interval: cfg.think}
	switch {
	case cfg.arrival == arrivalThink:
		s.offset = cfg.think * time.Duration(i) / time.Duration(cfg.clients)
	case cfg.think > 0:
		s.offset = time.Duration(r.Int64N(int64(cfg.think)))
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
			rec.recordPaced(classGet, e2e, service, err)
			if hook := e.cfg.onPacedGet; hook != nil {
				hook(e2e, service)
			}
		}
	}
}

package main

import (
	"context"
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
// whether short reads stay fast beside long ones.
func noisyWorkload() *workload {
	return &workload{
		name:    "noisy",
		classes: []class{classGet, classScan},
		clients: func(e *env) []client {
			return getsBeside(e, func(ctx context.Context, e *env, int64n func(int64) int64) (class, error) {
				return classScan, scanRandom(ctx, e, int64n, e.cfg.longScanLen)
			})
		},
	}
}

// getsBeside returns noisy's clients with long as the long read: --clients
// goroutines doing paced Gets (pacedGets) and --scanners goroutines
// looping on long, each with a random stream of its own, from which long
// draws its start.
func getsBeside(e *env, long func(ctx context.Context, e *env, int64n func(int64) int64) (class, error)) []client {
	var cs []client
	for i := range e.cfg.clients {
		cs = append(cs, pacedGets(e, i))
	}
	for i := range e.cfg.scanners {
		r := e.rand(e.cfg.clients + i)
		cs = append(cs, closedLoop(func(ctx context.Context) (class, error) { return long(ctx, e, r.Int64N) }))
	}
	return cs
}

// sleepUntil waits on timer until due, and reports false when ctx ends
// first: the paced clients' wait for their next Get.
func sleepUntil(ctx context.Context, timer *time.Timer, due time.Time) bool {
	if wait := time.Until(due); wait > 0 {
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
		}
	}
	return ctx.Err() == nil
}

// pacedGets returns noisy's Get client i: a Get, then a think time of
// --think, then the next Get. Each Get is timed from when it was due — the
// end of the think time — not from when the client's goroutine got to run
// again, so a store whose workers keep the client off its P (Go preempts
// only every 10 ms) cannot hide that stall: it shows in the latency, as in
// the measurement DESIGN.md describes (a 200 µs sleep delayed by 20–50 ms).
//
// A fixed schedule (each Get due one interval after the last was due,
// wrk2's correction) is the other way to keep stalls visible, but it only
// works while every Get takes less than the interval: a pool whose Gets
// wait up to a time slice (1 ms) behind scan steps falls further behind
// with every Get, and its latency becomes the length of the run.
func pacedGets(e *env, i int) client {
	r := e.rand(i)
	buf := make([]byte, 0, keyLen)
	think := e.cfg.think
	return func(ctx context.Context, rec *recorder) {
		timer := time.NewTimer(0)
		defer timer.Stop()
		// Stagger the clients so their Gets do not arrive in bursts.
		due := time.Now().Add(think * time.Duration(i) / time.Duration(e.cfg.clients))
		for {
			if !sleepUntil(ctx, timer, due) {
				return
			}
			err := get(ctx, e.db, buf, r.Int64N(e.keys.count()))
			now := time.Now()
			if ctx.Err() != nil {
				return
			}
			rec.record(classGet, now.Sub(due), err)
			due = now.Add(think)
		}
	}
}

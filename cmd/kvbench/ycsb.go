package main

import (
	"context"
	"math/rand/v2"
)

// ycsbMaxScanLen is YCSB's maxscanlength for workload E: its scans read a
// uniform 1 … 100 keys.
const ycsbMaxScanLen = 100

// ycsbMix is one YCSB core workload's operation proportions (summing to
// 1) and key distribution: scrambled zipfian, or, with latest, skewed to
// the newest keys (workload D).
type ycsbMix struct {
	read, update, insert, scan, rmw float64
	latest                          bool
}

// classes returns the classes the mix reports, in table order.
func (m ycsbMix) classes() []class {
	var cs []class
	for _, p := range []struct {
		share float64
		c     class
	}{{m.read, classGet}, {m.scan, classScan}, {m.update, classUpdate}, {m.insert, classInsert}, {m.rmw, classRMW}} {
		if p.share > 0 {
			cs = append(cs, p.c)
		}
	}
	return cs
}

// pick draws an operation with the mix's proportions.
func (m ycsbMix) pick(r *rand.Rand) class {
	u := r.Float64()
	for _, p := range []struct {
		share float64
		c     class
	}{{m.read, classGet}, {m.update, classUpdate}, {m.insert, classInsert}, {m.scan, classScan}} {
		if u < p.share {
			return p.c
		}
		u -= p.share
	}
	return classRMW
}

// ycsbWorkload is a YCSB core workload (A … F) from --clients goroutines,
// back to back. Reads, updates, scan starts and read-modify-writes choose
// among the keys that exist (loaded or inserted, never one still being
// inserted); inserts append keys beyond them.
func ycsbWorkload(name string, mix ycsbMix) *workload {
	return &workload{
		name:    name,
		classes: mix.classes(),
		clients: func(e *env) []client {
			cs := make([]client, e.cfg.clients)
			for i := range cs {
				cs[i] = newYCSBClient(e, mix, i)
			}
			return cs
		},
	}
}

// ycsbClient is one YCSB client goroutine's state.
type ycsbClient struct {
	e      *env
	mix    ycsbMix
	r      *rand.Rand
	choose func(r *rand.Rand, n int64) int64
	kbuf   []byte
	values *valueMaker
}

func newYCSBClient(e *env, mix ycsbMix, i int) client {
	c := &ycsbClient{
		e:      e,
		mix:    mix,
		r:      e.rand(i),
		kbuf:   make([]byte, 0, keyLen),
		values: newValueMaker(e.cfg),
	}
	if mix.latest {
		c.choose = newSkewedLatest(e.keys.count()).next
	} else {
		c.choose = newScrambledZipfian().next
	}
	return closedLoop(c.op)
}

// op runs one operation of the mix.
func (c *ycsbClient) op(ctx context.Context) (class, error) {
	db, ks := c.e.db, c.e.keys
	switch cl := c.mix.pick(c.r); cl {
	case classGet:
		return cl, get(ctx, db, c.kbuf, c.choose(c.r, ks.count()))
	case classUpdate:
		return cl, set(db, c.values, c.r, c.kbuf, c.choose(c.r, ks.count()))
	case classInsert:
		n := ks.reserve()
		defer ks.ack(n)
		return cl, set(db, c.values, c.r, c.kbuf, n)
	case classScan:
		count := ks.count()
		start := c.choose(c.r, count)
		n := 1 + c.r.IntN(ycsbMaxScanLen)
		// Near the end fewer keys exist than the scan asks for.
		return cl, scan(ctx, db, start, n, min(int64(n), count-start))
	default:
		n := c.choose(c.r, ks.count())
		if err := get(ctx, db, c.kbuf, n); err != nil {
			return cl, err
		}
		return cl, set(db, c.values, c.r, c.kbuf, n)
	}
}

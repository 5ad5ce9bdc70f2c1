package readpool

import (
	"sync"
	"time"
)

// Local queues, YATP's shape. When the queue is a Batcher, a worker that
// pops a task under the pool's lock may take a few more with it (the queue
// says which: the MLFQ gives fresh point reads only) into its own local
// queue, and steps those one after another without taking the lock in
// between; it files their steps together the next time it takes the lock.
// A worker that finds the shared queue empty steals half of another
// worker's local queue before it parks, so that a batch never waits behind
// a step that blocks while a worker is idle.
//
// A task in a local queue has been taken (POLLING, counted in running),
// exactly like the task a worker steps; only its step is late. The owner
// checks, before stepping it, whether it was cancelled or the pool closed
// meanwhile, and files it unstepped then (see Pool.work).
//
// Ownership moves through the local queue's own mutex, which is never held
// while Pool.mu is being taken (the lock order is Pool.mu, then a local
// queue's mutex), so a thief holding Pool.mu may take it.

// localCap is how many tasks a worker takes at once, the popped one
// included. Measured with BenchmarkDispatch (pool-mlfq, point reads, five
// interleaved rounds, 2026-12-03): 709 ns/task (median) taking one at a
// time, 602 ns taking up to 8; 32 measured no better than 8.
const localCap = 8

// localQueue is a worker's batch of taken tasks: a ring the owner pops from
// the front of and a thief takes from the back of.
type localQueue struct {
	mu   sync.Mutex
	ring [localCap]*Handle
	head int
	n    int
}

// push adds h at the back; the caller knows there is room.
func (l *localQueue) push(h *Handle) {
	l.mu.Lock()
	l.ring[(l.head+l.n)%localCap] = h
	l.n++
	l.mu.Unlock()
}

// pop takes the task at the front, nil when empty.
func (l *localQueue) pop() *Handle {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return nil
	}
	h := l.ring[l.head]
	l.ring[l.head] = nil
	l.head = (l.head + 1) % localCap
	l.n--
	return h
}

// stealHalf takes the back half of the queue (rounded up) into dst, the
// newest first, and returns it.
func (l *localQueue) stealHalf(dst []*Handle) []*Handle {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := (l.n + 1) / 2
	for range k {
		l.n--
		i := (l.head + l.n) % localCap
		dst = append(dst, l.ring[i])
		l.ring[i] = nil
	}
	return dst
}

// len is the number of tasks queued.
func (l *localQueue) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// takeBatchLocked fills w's local queue, after w popped first, with what
// the queue gives for it (Batcher.PopBatch), under p.mu. Tasks that must
// not step are ended by the caller: they come back in stops.
func (p *Pool) takeBatchLocked(w *worker, first *Handle, now time.Duration, stops []stopped) []stopped {
	b := p.batcher
	if b == nil || w.extra || p.readsBlocked() {
		// Steps block on the disk (an extra stands in for one): a batch
		// would wait behind each of its reads in turn, where extra workers
		// can run them side by side.
		return stops
	}
	for taken := 1; taken < localCap; taken++ {
		e := b.PopBatch(&first.e, now)
		if e == nil {
			break
		}
		h, stop := p.takeLocked(e, now)
		if stop != nil {
			stops = append(stops, stopped{h, stop})
			continue
		}
		w.local.push(h)
		w.own.stats.batched.Add(1)
	}
	return stops
}

// stealLocked takes half of the fullest other worker's local queue into
// w's, under p.mu, and reports whether it took any. Only workers take
// batches; extra workers (standing in for stuck ones) may steal them.
func (p *Pool) stealLocked(w *worker) bool {
	if p.batcher == nil {
		return false
	}
	var victim *worker
	best := 0
	for _, v := range p.slots.workers {
		if v == w {
			continue
		}
		if n := v.local.len(); n > best {
			victim, best = v, n
		}
	}
	if victim == nil {
		return false
	}
	var buf [localCap]*Handle
	got := victim.local.stealHalf(buf[:0])
	for _, h := range got {
		w.local.push(h)
	}
	w.own.stats.stolen.Add(int64(len(got)))
	return len(got) > 0
}

// stopped is a taken task that must end unstepped, and why.
type stopped struct {
	h   *Handle
	err error
}

package readpool

import "time"

// The caller hand-off: what a worker does with its P between steps.
//
// A step that completes a task whose spawner is blocked on it (Awaited)
// readies that goroutine on the worker's P, where it runs only when the
// worker gives the P up. So the worker owes its P to the callers it readied
// and pays the debt (a hand-off: runtime.Gosched) by these rules:
//
//   - at once while long tasks (scans, coprocessor requests) are live: their
//     consumers, readied by their batches, wait in the P's run queue, and
//     each caller readied after the first would push the one before behind
//     them;
//   - with only point reads (SpawnOptions.Short) live, after up to delay of
//     stepping the queued fresh point reads, so that under a closed loop of
//     readers one hand-off serves several (a Gosched is a trip through Go's
//     global run queue);
//   - at once before a task that is not a fresh point read: its step may
//     take a quarter slice;
//   - by parking, which gives the P away too (counted as a hand-off).
//
// Owed or not, a worker that has kept its P for goschedEvery gives it back
// to Go's scheduler (a gosched, not counted as a hand-off), which pays any
// debt as well: the program's other goroutines would otherwise wait for Go's
// 10 ms preemption.
//
// handoff is the decision alone, with the time passed in: it holds the debt
// and answers what to do; the worker (Pool.work) does it and counts it.

// pAction is what a worker does with its P before it goes on.
type pAction uint8

const (
	keepP    pAction = iota // go on stepping
	goschedP                // give the P back to Go's scheduler
	handOffP                // give the P to the callers our steps readied (a counted hand-off)
)

// handoff is one worker's hand-off state and rules. Its methods are small
// and concrete so that they inline into the worker loop.
type handoff struct {
	// delay is how long a worker with only point reads about may go on
	// stepping them after it readied a caller (Options.handoffDelay).
	delay time.Duration
	// goschedEvery is how long a worker keeps its P between hand-backs to
	// Go's scheduler (Options.goschedEvery).
	goschedEvery time.Duration

	// owed: a step readied a caller at owedSince, and the P has not been
	// given up since.
	owed      bool
	owedSince time.Duration
}

// before answers, before the worker steps its next task, whether the
// callers it owes must run first: yes, unless the task is a fresh point
// read (Short, not stepped yet).
func (ho *handoff) before(freshShort bool) pAction {
	if ho.owed && !freshShort {
		ho.owed = false
		return handOffP
	}
	return keepP
}

// wantsLive reports whether after answers differently by whether long
// tasks are live: only while a hand-off is owed. The worker reads that
// shared counter only then.
func (ho *handoff) wantsLive(readied bool) bool { return readied || ho.owed }

// after answers, after a step that ended at now (and readied a caller, or
// not), what the worker does before it goes on; lastGosched is when it
// last gave its P up (a step may have done so inside ShouldYield), and
// live whether long tasks are live (read only when wantsLive).
func (ho *handoff) after(now, lastGosched time.Duration, readied, live bool) pAction {
	if readied && !ho.owed {
		ho.owed, ho.owedSince = true, now
	}
	if ho.owed && (now-ho.owedSince >= ho.delay || live) {
		ho.owed = false
		return handOffP
	}
	if now-lastGosched >= ho.goschedEvery {
		ho.owed = false
		return goschedP
	}
	return keepP
}

// park reports whether a worker about to park pays a hand-off by it, and
// clears the debt: parking gives the P to the callers it readied.
func (ho *handoff) park() bool {
	owed := ho.owed
	ho.owed = false
	return owed
}

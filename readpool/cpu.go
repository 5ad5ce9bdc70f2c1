package readpool

import (
	"runtime"
	"syscall"
	"time"
)

// The CPU controller. One extra worker per blocked read (blocking.go) keeps
// the steps that are not blocked at Workers, but a step whose read has
// returned is not yet on the CPU: it waits for a P, and Go hands a P from a
// thread in a system call to another only after ~20 µs. Counted as running
// meanwhile, it holds its slot; on a disk of 200 µs a read, 32 clients'
// Gets then kept only 1–8 reads in flight where a goroutine per request
// kept ~30, and the pool served 0.2–0.3× their Gets/s (2 workers).
//
// So, while reads block and tasks wait, a controller measures what the
// bound is for — the process's CPU — and lets the pool run slack more steps
// while it has room, as TiKV's read pool grows its threads while they block
// and the CPU is not busy (RFC 0114, tikv #13314) and CockroachDB moves its
// slot count a step per millisecond tick. Without a blocked read the slack
// does not count, so in memory Workers bounds the steps exactly.

// slackPolicy moves the slack by one step per tick: up while tasks wait and
// the process's CPU use is below low, down when it is at or above high, or
// when nothing waits. A pure rule, its inputs passed in.
type slackPolicy struct {
	max       int64   // the most slack: the extras MaxWorkers allows
	low, high float64 // CPU use, a fraction of GOMAXPROCS
}

// slackInput is what one tick of the controller saw.
type slackInput struct {
	blocked int64   // reads blocked off the CPU now
	waiting bool    // ready tasks are queued, or a caller was refused a slot since the last tick
	cpu     float64 // the process's CPU use since the last tick, a fraction of GOMAXPROCS
}

// defaultSlackPolicy keeps the process's CPU below 90% of GOMAXPROCS, and
// grows only below 75%: the gap keeps it from moving at every tick.
func defaultSlackPolicy(maxExtras int) slackPolicy {
	return slackPolicy{max: int64(maxExtras), low: 0.75, high: 0.9}
}

// next is the slack after a tick that saw in, from slack.
func (sp slackPolicy) next(slack int64, in slackInput) int64 {
	switch {
	case in.blocked <= 0:
		return 0 // nothing waits on the disk: Workers is the bound
	case in.cpu >= sp.high || !in.waiting:
		return max(0, slack-1)
	case in.cpu < sp.low:
		return min(sp.max, slack+1)
	}
	return slack
}

// cpuMeter measures the process's CPU use between two readings, as a
// fraction of GOMAXPROCS.
type cpuMeter struct {
	env       cpuEnv
	wall, cpu time.Duration // at the last reading; wall 0 = none yet
}

// cpuEnv is where the meter reads its clocks.
type cpuEnv struct {
	now     func() time.Duration // wall time
	cpuTime func() time.Duration // the process's CPU time, user and system
	procs   func() int           // GOMAXPROCS
}

// use returns the CPU use since the last reading (0 at the first).
func (m *cpuMeter) use() float64 {
	wall, cpu := m.env.now(), m.env.cpuTime()
	prevWall, prevCPU := m.wall, m.cpu
	m.wall, m.cpu = wall, cpu
	if prevWall == 0 || wall <= prevWall {
		return 0
	}
	return float64(cpu-prevCPU) / float64(wall-prevWall) / float64(max(m.env.procs(), 1))
}

// reset forgets the last reading: the next use starts a new window.
func (m *cpuMeter) reset() { m.wall = 0 }

// ProcessCPU is the process's CPU time, user and system, from getrusage:
// the kernel sums its threads' run time, to the microsecond. The pool's CPU
// controller reads it, and so does background work that runs only while
// the CPU has room (kv's cache warming).
func ProcessCPU() time.Duration { return processCPU() }

// processCPU is the process's CPU time, from getrusage: the kernel sums
// its threads' run time, to the microsecond.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// slackTick is the pool's controller tick, run by the monitor's loop every
// slackPeriod while reads block or slack remains. It reports whether it
// wants the next tick soon.
func (p *Pool) slackTick() bool {
	blocked, slack := p.blocked.Load(), p.slack.Load()
	if blocked <= 0 && slack == 0 {
		p.meter.reset()
		return false
	}
	refused := p.refused.Swap(false)
	in := slackInput{blocked: blocked, waiting: refused || p.queued.Load() > 0, cpu: p.meter.use()}
	next := p.slackPolicy.next(slack, in)
	p.slack.Store(next)
	if next > slack && in.waiting {
		p.mu.Lock()
		p.startExtrasLocked()
		p.mu.Unlock()
	}
	return true
}

// slackPeriod is the controller's tick: CockroachDB's slot adjuster ticks
// at 1 kHz; a step of the slack per tick takes it from 0 to 30 in 30 ms.
const slackPeriod = time.Millisecond

// goCPUEnv reads the process's own clocks.
func goCPUEnv(now func() time.Duration) cpuEnv {
	return cpuEnv{now: now, cpuTime: processCPU, procs: func() int { return runtime.GOMAXPROCS(0) }}
}

package tikv

import "sync"

// gate lets calls into the store run until Close, and lets Close wait for
// the ones running. Unlike a read lock it may be entered again by a call
// already inside (a coprocessor step reading its rows) while Close waits.
type gate struct {
	mu     sync.Mutex
	idle   sync.Cond
	n      int
	closed bool
}

// enter reports whether the store is open; if it is, the caller must
// leave.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.closed {
		g.idle.Broadcast()
	}
}

// close refuses every later enter and waits for the calls inside to leave.
func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.idle.L == nil {
		g.idle.L = &g.mu
	}
	for g.n > 0 {
		g.idle.Wait()
	}
}

package readpool_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// roundRobin is a Queue written outside package readpool, from its exported
// parts only: strict round-robin across groups, arrival order within one.
// That it runs a pool shows the Queue interface is real.
type roundRobin struct {
	groups map[string]*readpool.EntryList
	ring   []string // groups with queued entries, in turn order
	n      int
	pre    *readpool.Preemption
	steps  int64
}

func newRoundRobin() *roundRobin {
	return &roundRobin{groups: map[string]*readpool.EntryList{}, pre: readpool.NewPreemption()}
}

func (q *roundRobin) MayInline(e *readpool.Entry) bool { e.Class = 0; return true }

func (q *roundRobin) Push(e *readpool.Entry, _ time.Duration) {
	l := q.groups[e.Group]
	if l == nil {
		l = &readpool.EntryList{}
		q.groups[e.Group] = l
	}
	if l.Len() == 0 {
		q.ring = append(q.ring, e.Group)
	}
	l.Push(e)
	q.n++
}

func (q *roundRobin) Ran(e *readpool.Entry, _ time.Duration) { e.Class = 0 }

func (q *roundRobin) Pop(time.Duration) *readpool.Entry {
	if len(q.ring) == 0 {
		return nil
	}
	g := q.ring[0]
	q.ring = q.ring[1:]
	l := q.groups[g]
	e := l.Pop()
	if l.Len() > 0 {
		q.ring = append(q.ring, g) // to the back of the turn order
	}
	q.n--
	e.Class = 0
	return e
}

func (q *roundRobin) Remove(e *readpool.Entry) bool {
	l := q.groups[e.Group]
	if l == nil || !e.Queued() {
		return false
	}
	l.Remove(e)
	q.n--
	if l.Len() == 0 {
		for i, g := range q.ring {
			if g == e.Group {
				q.ring = append(q.ring[:i], q.ring[i+1:]...)
				break
			}
		}
	}
	return true
}

func (q *roundRobin) Done(*readpool.Entry, time.Duration, time.Duration) { q.steps++ }
func (q *roundRobin) Len() int                                           { return q.n }
func (q *roundRobin) Held() (int, time.Duration)                         { return 0, 0 }
func (q *roundRobin) Preemption() *readpool.Preemption                   { return q.pre }
func (q *roundRobin) Stats() readpool.QueueStats {
	return readpool.QueueStats{Kind: "round-robin", Levels: []readpool.LevelStats{{Queued: q.n, Steps: q.steps}}}
}

type recordTask struct {
	name    string
	order   *[]string
	mu      *sync.Mutex
	block   <-chan struct{}
	started chan struct{} // closed when a blocking task's step starts
	done    chan error
}

func (t *recordTask) Step(*readpool.StepContext) readpool.Status {
	if t.block != nil {
		close(t.started)
		<-t.block
	}
	t.mu.Lock()
	*t.order = append(*t.order, t.name)
	t.mu.Unlock()
	return readpool.Ready
}

func (t *recordTask) Done(err error) { t.done <- err }

func TestQueue_WrittenOutsideThePackage(t *testing.T) {
	q := newRoundRobin()
	p, err := readpool.New(readpool.Options{Workers: 1, Queue: q})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()

	var mu sync.Mutex
	var order []string
	release := make(chan struct{})
	spawn := func(name, group string, block <-chan struct{}) *recordTask {
		task := &recordTask{name: name, order: &order, mu: &mu, block: block, started: make(chan struct{}), done: make(chan error, 1)}
		_, err := p.Spawn(context.Background(), task, readpool.SpawnOptions{Group: group})
		require.NoError(t, err)
		return task
	}
	blocker := spawn("blocker", "x", release)
	<-blocker.started // the worker runs it: the others queue behind it
	tasks := []*recordTask{
		spawn("a1", "a", nil), spawn("a2", "a", nil), spawn("a3", "a", nil),
		spawn("b1", "b", nil), spawn("c1", "c", nil), spawn("b2", "b", nil),
	}
	// Removal through the queue: a cancelled task leaves it at once.
	gone := spawn("c2", "c", nil)
	h, err := p.Spawn(context.Background(), &recordTask{name: "never", order: &order, mu: &mu, done: make(chan error, 1)}, readpool.SpawnOptions{Group: "d"})
	require.NoError(t, err)
	h.Cancel(nil)
	assert.Equal(t, 7, p.Stats().Queued)
	close(release)
	require.NoError(t, <-blocker.done)
	for _, task := range append(tasks, gone) {
		require.NoError(t, <-task.done)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"blocker", "a1", "b1", "c1", "a2", "b2", "c2", "a3"}, order)
	st := p.Stats()
	assert.Equal(t, "round-robin", st.Queue.Kind)
	assert.EqualValues(t, 1, st.Dropped)
}

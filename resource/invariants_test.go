package resource

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

// A random mix of every queue call, and of group changes, against a model
// of where each entry is: the scheduler's counts (per group queued, held,
// running, occupancy; per class; the active list), its Len, Held and
// Preemption hint always agree with it, and everything drains to zero.
func TestScheduler_RandomOpsKeepCountsExact(t *testing.T) {
	rng := newRand(t)
	for round := range *roundFlag {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			m := NewManager()
			s := NewScheduler(m)
			names := []string{"a", "b", "c", "d"}
			prios := []Priority{0, PriorityLow, PriorityMedium, PriorityHigh}
			randConfig := func(name string) GroupConfig {
				return GroupConfig{
					Name:      name,
					RUPerSec:  []float64{0, 5, 50, 500}[rng.IntN(4)], // 0 = unlimited
					Burstable: rng.IntN(2) == 0,
					Priority:  prios[rng.IntN(len(prios))],
				}
			}
			for _, n := range names {
				require.NoError(t, m.Put(randConfig(n)))
			}
			groups := map[*Group]bool{m.Default(): true} // every group an entry has had
			var queued, running []*readpool.Entry
			var now time.Duration
			const maxTasks = 16
			var log []string
			sawHeld := 0
			check := func() {
				t.Helper()
				type counts struct{ ready, held, running int64 }
				want := map[*Group]*counts{}
				for g := range groups {
					want[g] = &counts{}
				}
				ready := 0
				for _, e := range queued {
					c := want[s.groupOf(e)]
					if e.QueueState&qsHeld != 0 {
						c.held++
					} else {
						c.ready++
						ready++
					}
				}
				for _, e := range running {
					want[s.groupOf(e)].running++
				}
				occ, held := 0, 0
				for g, c := range want {
					held += int(c.held)
					assert.Equal(t, c.ready, g.queued.Load(), "%s queued", g.name)
					assert.Equal(t, c.held, g.held.Load(), "%s held", g.name)
					assert.Equal(t, c.running, g.running.Load(), "%s running", g.name)
					assert.EqualValues(t, c.ready+c.held+c.running, g.occupancy, "%s occupancy", g.name)
					assert.Equal(t, g.occupancy > 0, g.active, "%s active", g.name)
					if g.occupancy > 0 {
						assert.Contains(t, s.active, g)
					} else {
						assert.NotContains(t, s.active, g)
					}
					occ += g.occupancy
				}
				assert.Equal(t, occ-held, s.class[0]+s.class[1]+s.class[2], "class counts: held tasks take only their group's room")
				assert.Equal(t, ready, s.Len())
				n, until := s.Held()
				assert.Equal(t, len(queued)-ready, n)
				if min := s.held.Min(); min != nil {
					assert.Equal(t, time.Duration(min.Key), until)
				}
				if min := s.ready.Min(); min != nil {
					assert.Equal(t, int64(min.Key)+int64(FarBehind), s.Preemption().Load())
				} else {
					assert.Equal(t, readpool.NoPreemption, s.Preemption().Load())
				}
				if t.Failed() {
					t.Fatalf("after %v", log)
				}
			}
			remove := func(l []*readpool.Entry, e *readpool.Entry) []*readpool.Entry {
				for i, x := range l {
					if x == e {
						return append(l[:i], l[i+1:]...)
					}
				}
				t.Fatalf("%p not in the list", e)
				return nil
			}
			for range 400 {
				switch op := rng.IntN(10); op {
				case 0, 1: // spawn
					g := m.Resolve(names[rng.IntN(len(names)+1)%len(names)])
					if rng.IntN(5) == 0 {
						g = m.Resolve("no such group")
					}
					groups[g] = true
					e := entry(g)
					if rng.IntN(4) == 0 {
						e.Priority = uint64(prios[rng.IntN(len(prios))])
					}
					if s.Admit(e, maxTasks) {
						s.Push(e, now)
						queued = append(queued, e)
						log = append(log, "spawn "+g.name)
					} else {
						log = append(log, "busy "+g.name)
					}
				case 2, 3: // pop
					e := s.Pop(now)
					if e == nil {
						log = append(log, "pop nil")
						break
					}
					for r := range s.ready.All() {
						assert.GreaterOrEqual(t, r.Key, e.Key, "popped the lowest key")
					}
					assert.Equal(t, int64(e.Key), e.Class)
					queued = remove(queued, e)
					running = append(running, e)
					log = append(log, "pop "+s.groupOf(e).name)
				case 4, 5: // a step ends
					if len(running) == 0 {
						break
					}
					e := running[rng.IntN(len(running))]
					running = remove(running, e)
					d := time.Duration(1+rng.IntN(5000)) * time.Microsecond
					e.Elapsed += d
					s.Charge(e, readpool.Usage{Exec: d, Bytes: int64(rng.IntN(64 << 10)), First: rng.IntN(3) == 0})
					if rng.IntN(3) > 0 {
						s.Push(e, now)
						queued = append(queued, e)
						log = append(log, "yield "+s.groupOf(e).name)
					} else {
						log = append(log, "end "+s.groupOf(e).name)
					}
					s.Done(e, d, now)
				case 6: // cancel a queued task
					if len(queued) == 0 {
						break
					}
					e := queued[rng.IntN(len(queued))]
					require.True(t, s.Remove(e))
					queued = remove(queued, e)
					log = append(log, "remove "+s.groupOf(e).name)
				case 7:
					now += time.Duration(rng.IntN(200)) * time.Millisecond
					log = append(log, fmt.Sprint("now ", now))
				case 8:
					c := randConfig(names[rng.IntN(len(names))])
					require.NoError(t, m.Put(c))
					log = append(log, fmt.Sprintf("put %+v", c))
				case 9:
					name := names[rng.IntN(len(names))]
					if err := m.Delete(name); err != nil {
						require.ErrorIs(t, err, ErrNoGroup)
					}
					log = append(log, "delete "+name)
				}
				check()
				if n, _ := s.Held(); n > 0 {
					sawHeld++
				}
			}
			t.Logf("entries held after %d of 400 operations", sawHeld)
			// Close's drain, then everything is back to zero.
			for e := s.Pop(readpool.Forever); e != nil; e = s.Pop(readpool.Forever) {
				queued = remove(queued, e)
				s.Done(e, 0, now)
			}
			for _, e := range running {
				s.Done(e, 0, now)
			}
			running = nil
			check()
			assert.Empty(t, queued)
			assert.Empty(t, s.active)
			assert.Equal(t, [numClasses]int{}, s.class)
		})
	}
}

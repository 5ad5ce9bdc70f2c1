package resource

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertShares checks that got (RU per group) splits as want does, each
// group's fraction within tol (relative) of its due.
func assertShares(t *testing.T, want, got map[string]float64, tol float64) {
	t.Helper()
	var wantSum, gotSum float64
	for k := range want {
		wantSum += want[k]
		gotSum += got[k]
	}
	require.Positive(t, gotSum, "nothing ran")
	for k := range want {
		due := want[k] / wantSum
		frac := got[k] / gotSum
		assert.InEpsilon(t, due, frac, tol, "group %s: %.4f of the RU, due %.4f (RU %v)", k, frac, due, got)
	}
}

// ratioString formats got as ratios to the smallest due share, for the log.
func ratioString(names []string, got map[string]float64) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += " : "
		}
		s += fmt.Sprintf("%.3f", got[n]/got[names[0]])
	}
	return s
}

func TestScheduler_SaturatedGroupsShareByRUPerSec(t *testing.T) {
	for _, c := range []struct {
		name    string
		shares  []float64
		workers int
	}{
		{"3:1 one worker", []float64{3000, 1000}, 1},
		{"3:1 four workers", []float64{3000, 1000}, 4},
		{"1:2:3 one worker", []float64{1000, 2000, 3000}, 1},
		{"1:2:3 four workers", []float64{1000, 2000, 3000}, 4},
		{"1:1 unlimited vs 10000", []float64{0, UnlimitedShare}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			sm := newSim(t, c.workers)
			step := stepCost{exec: time.Duration(c.workers) * time.Millisecond} // CI-sized: ~60k steps a case
			want := map[string]float64{}
			var names []string
			for i, sh := range c.shares {
				name := fmt.Sprintf("g%d", i)
				names = append(names, name)
				want[name] = share(&GroupConfig{RUPerSec: sh})
				g := sm.group(GroupConfig{Name: name, RUPerSec: sh, Burstable: true}, step)
				sm.spawn(g, 2*c.workers+3) // a saturating tenant
			}
			sm.run(time.Minute)
			got := sm.ru()
			t.Logf("RU %s over a simulated minute (%v)", ratioString(names, got), got)
			assertShares(t, want, got, 0.05)
		})
	}
}

func TestScheduler_ShareHoldsWhateverTheStepLengths(t *testing.T) {
	for _, c := range []struct {
		name   string
		a, b   stepCost
		shares [2]float64
	}{
		{"1ms vs 0.1ms", stepCost{exec: time.Millisecond}, stepCost{exec: 100 * time.Microsecond}, [2]float64{1000, 1000}},
		{"0.1ms vs 3ms", stepCost{exec: 100 * time.Microsecond}, stepCost{exec: 3 * time.Millisecond}, [2]float64{1000, 1000}},
		{"bytes: 4KiB vs 256KiB a step", stepCost{exec: 200 * time.Microsecond, bytes: 4 << 10}, stepCost{exec: 200 * time.Microsecond, bytes: 256 << 10}, [2]float64{500, 500}},
		{"2:1, 1ms vs 0.1ms", stepCost{exec: time.Millisecond}, stepCost{exec: 100 * time.Microsecond}, [2]float64{2000, 1000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sm := newSim(t, 1)
			sm.spawn(sm.group(GroupConfig{Name: "a", RUPerSec: c.shares[0], Burstable: true}, c.a), 4)
			sm.spawn(sm.group(GroupConfig{Name: "b", RUPerSec: c.shares[1], Burstable: true}, c.b), 4)
			sm.run(10 * time.Second)
			got := sm.ru()
			t.Logf("RU a:b = %s (%v); steps a %d, b %d", ratioString([]string{"b", "a"}, got), got,
				sm.steps[sm.m.Resolve("a")], sm.steps[sm.m.Resolve("b")])
			assertShares(t, map[string]float64{"a": c.shares[0], "b": c.shares[1]}, got, 0.10)
		})
	}
}

// A group that had the pool to itself does not pay for it later, and one
// back from idleness does not cash in the time it was away.
func TestScheduler_IdleGroupBanksNoCredit(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			sm := newSim(t, workers)
			step := stepCost{exec: time.Millisecond}
			a := sm.group(GroupConfig{Name: "a", RUPerSec: 1000, Burstable: true}, step)
			b := sm.group(GroupConfig{Name: "b", RUPerSec: 1000, Burstable: true}, step)
			sm.spawn(a, 2*workers+2)
			sm.run(10 * time.Second)
			alone := sm.ru()
			require.Zero(t, alone["b"])
			require.Positive(t, alone["a"])

			sm.spawn(b, 2*workers+2)
			stB := sm.stats("b")
			assert.Equal(t, sm.stats("a").VirtualTime, stB.VirtualTime, "b starts at the active groups' smallest virtual time")
			before := sm.ru()
			sm.run(time.Second)
			got := delta(before, sm.ru())
			t.Logf("the second after b arrives: a %.1f RU, b %.1f RU (a alone: %.1f RU in 10 s)", got["a"], got["b"], alone["a"])
			assertShares(t, map[string]float64{"a": 1, "b": 1}, got, 0.05)
			// And not only on average: b does not run alone for a while first.
			before = sm.ru()
			sm.run(100 * time.Millisecond)
			got = delta(before, sm.ru())
			assertShares(t, map[string]float64{"a": 1, "b": 1}, got, 0.10)
		})
	}
}

// The randomised version: any number of saturated groups with any shares
// and step costs get RU in proportion to their shares.
func TestScheduler_RandomGroupsShareByRUPerSec(t *testing.T) {
	rng := newRand(t)
	for round := range *roundFlag {
		n := 2 + rng.IntN(4)
		workers := 1 + rng.IntN(4)
		sm := newSim(t, workers)
		want := map[string]float64{}
		desc := ""
		for i := range n {
			name := fmt.Sprintf("g%d", i)
			sh := float64(100 * (1 + rng.IntN(50)))
			c := stepCost{exec: time.Duration(100+rng.IntN(2000)) * time.Microsecond, bytes: int64(rng.IntN(128 << 10))}
			want[name] = sh
			for _, e := range sm.spawn(sm.group(GroupConfig{Name: name, RUPerSec: sh, Burstable: true}, c), workers+1+rng.IntN(4)) {
				// Long scans, past the level penalties: a slow group's entries
				// would otherwise cross them during the measurement, and pay
				// 100 ms of virtual time (worth 100 ms × its RU/s) for it.
				e.Elapsed = time.Second
			}
			desc += fmt.Sprintf(" %s{%v RU/s, %v, %d B}", name, sh, c.exec, c.bytes)
		}
		sm.run(time.Second) // warm up: every group has its entries' keys in step
		before := sm.ru()
		sm.run(10 * time.Second)
		got := delta(before, sm.ru())
		if assertShares(t, want, got, 0.10); t.Failed() {
			t.Fatalf("round %d, %d workers:%s", round, workers, desc)
		}
	}
}

// The idle rule when every group is idle at once: a for 10 s alone, then a
// moment with nothing queued (a's requests all answered), then b and a
// both busy again. b must not run alone for the 10 s a had.
func TestScheduler_IdleGroupBanksNoCreditAcrossAnIdlePool(t *testing.T) {
	sm := newSim(t, 1)
	step := stepCost{exec: time.Millisecond}
	a := sm.group(GroupConfig{Name: "a", RUPerSec: 1000, Burstable: true}, step)
	b := sm.group(GroupConfig{Name: "b", RUPerSec: 1000, Burstable: true}, step)
	for _, e := range sm.spawn(a, 4) {
		sm.left[e] = 2500 // 10 s of 1 ms steps in all
	}
	sm.run(10 * time.Second)
	require.Zero(t, sm.s.Len(), "a's requests have all been answered")
	require.Empty(t, sm.running)
	sm.now += time.Millisecond

	sm.spawn(b, 4)
	sm.spawn(a, 4)
	before := sm.ru()
	sm.run(time.Second)
	got := delta(before, sm.ru())
	t.Logf("the second after both return: a %.1f RU, b %.1f RU; virtual times a %v, b %v",
		got["a"], got["b"], sm.stats("a").VirtualTime, sm.stats("b").VirtualTime)
	assertShares(t, map[string]float64{"a": 1, "b": 1}, got, 0.10)
}

// A group held to its RU/s by its bucket: saturating alone, it consumes its
// RU/s (plus the one second's worth its bucket starts with), and its
// waiting tasks are counted as held and throttled.
func TestScheduler_LimitedGroupHeldToItsRUPerSec(t *testing.T) {
	for _, c := range []struct {
		name    string
		workers int
		step    stepCost
	}{
		{"one worker, 3ms steps", 1, stepCost{exec: 3 * time.Millisecond}},
		{"two workers, 0.5ms steps", 2, stepCost{exec: 500 * time.Microsecond}},
		{"one worker, 64KiB reads", 1, stepCost{exec: 100 * time.Microsecond, bytes: 64 << 10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sm := newSim(t, c.workers)
			g := sm.group(GroupConfig{Name: "lim", RUPerSec: 200}, c.step)
			es := sm.spawn(g, 4*c.workers)
			var sawHeld bool
			var throttled []time.Duration
			for range 60 {
				sm.run(time.Second)
				st := sm.stats("lim")
				n, _ := sm.s.Held()
				assert.EqualValues(t, n, st.Held, "Stats.Held is the held set")
				assert.EqualValues(t, len(es), st.Held+st.Queued+st.Running, "every entry is held, queued or running")
				sawHeld = sawHeld || st.Held > 0
				throttled = append(throttled, st.Throttled)
			}
			ru := sm.stats("lim").RU
			t.Logf("%.1f RU/s over a simulated minute (limit 200); throttled %v", ru/60, throttled[len(throttled)-1])
			assert.InEpsilon(t, 200, ru/60, 0.05)
			assert.InDelta(t, 200, sm.stats("lim").RULastSecond, 20, "the last second's RU")
			assert.True(t, sawHeld, "its entries wait in the held set")
			assert.Less(t, throttled[0], throttled[len(throttled)-1], "Throttled grows")
			assert.IsIncreasing(t, throttled)
		})
	}
}

// A limit binds while the spare capacity goes to a burstable neighbour: no
// worker time is lost to the held group.
func TestScheduler_LimitLeavesSpareCapacityToOthers(t *testing.T) {
	sm := newSim(t, 1)
	step := stepCost{exec: 3 * time.Millisecond} // 1 RU, 333 RU/s in all
	sm.spawn(sm.group(GroupConfig{Name: "lim", RUPerSec: 200}, step), 4)
	sm.spawn(sm.group(GroupConfig{Name: "free", RUPerSec: 100, Burstable: true}, step), 4)
	sm.run(time.Second) // the limited group's first, full, bucket
	before := sm.ru()
	sm.run(time.Minute)
	got := delta(before, sm.ru())
	t.Logf("lim %.1f RU/s, free %.1f RU/s", got["lim"]/60, got["free"]/60)
	assert.InEpsilon(t, 200, got["lim"]/60, 0.05, "its fair share would be 222 RU/s, its limit is 200")
	assert.InEpsilon(t, 1000.0/3, (got["lim"]+got["free"])/60, 0.01, "the worker never idles")
}

package resource

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t0 is the tests' epoch; at(s) is s seconds after it.
var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func TestWatchList_AddLookupExpire(t *testing.T) {
	l := newWatchList(8)
	k := WatchKey{StartKey: "user/42"}
	l.add("g", k, RunawayKill, at(0), at(60))

	for _, s := range []int{0, 1, 59} {
		a, ok := l.lookup("g", k, at(s))
		require.True(t, ok, "live at %ds", s)
		assert.Equal(t, RunawayKill, a)
	}
	_, ok := l.lookup("h", k, at(1))
	assert.False(t, ok, "another group's read is not watched")
	_, ok = l.lookup("g", WatchKey{StartKey: "user/43"}, at(1))
	assert.False(t, ok, "another start key is not watched")

	_, ok = l.lookup("g", k, at(60))
	assert.False(t, ok, "a watch ends at its expiry")
	assert.Zero(t, l.len(), "and is dropped then")
}

func TestWatchList_TaskIDIsTheIdentity(t *testing.T) {
	l := newWatchList(8)
	l.add("g", WatchKey{TaskID: 7, StartKey: "a"}, RunawayCooldown, at(0), at(10))
	a, ok := l.lookup("g", WatchKey{TaskID: 7, StartKey: "zzz"}, at(1))
	require.True(t, ok, "with a task id the start key does not matter")
	assert.Equal(t, RunawayCooldown, a)
	_, ok = l.lookup("g", WatchKey{TaskID: 8, StartKey: "a"}, at(1))
	assert.False(t, ok, "another task id")
	_, ok = l.lookup("g", WatchKey{StartKey: "a"}, at(1))
	assert.False(t, ok, "a read without a task id is not the task's")
}

func TestWatchList_AddReplaces(t *testing.T) {
	l := newWatchList(8)
	k := WatchKey{TaskID: 1}
	l.add("g", k, RunawayDryRun, at(0), at(100))
	l.add("g", k, RunawayKill, at(5), at(10))
	assert.Equal(t, 1, l.len())
	a, ok := l.lookup("g", k, at(9))
	require.True(t, ok)
	assert.Equal(t, RunawayKill, a, "the later watch's action")
	_, ok = l.lookup("g", k, at(10))
	assert.False(t, ok, "and its expiry, even sooner than the old one's")
}

func TestWatchList_AddAlreadyExpiredIsNothing(t *testing.T) {
	l := newWatchList(8)
	l.add("g", WatchKey{TaskID: 1}, RunawayKill, at(5), at(5))
	assert.Zero(t, l.len())
}

// A full list makes room by evicting the watch that expires soonest, and
// never grows past its bound.
func TestWatchList_BoundEvictsSoonest(t *testing.T) {
	l := newWatchList(3)
	l.add("g", WatchKey{TaskID: 1}, RunawayKill, at(0), at(30))
	l.add("g", WatchKey{TaskID: 2}, RunawayKill, at(0), at(10)) // soonest
	l.add("g", WatchKey{TaskID: 3}, RunawayKill, at(0), at(20))
	l.add("g", WatchKey{TaskID: 4}, RunawayKill, at(1), at(5)) // evicts 2, though it expires sooner still
	assert.Equal(t, 3, l.len())
	assert.Equal(t, int64(1), l.evicted)
	for id, want := range map[uint64]bool{1: true, 2: false, 3: true, 4: true} {
		_, ok := l.lookup("g", WatchKey{TaskID: id}, at(2))
		assert.Equal(t, want, ok, "task %d", id)
	}

	// An expired entry makes room without an eviction.
	l.add("g", WatchKey{TaskID: 5}, RunawayKill, at(6), at(40)) // 4 expired at 5
	assert.Equal(t, 3, l.len())
	assert.Equal(t, int64(1), l.evicted)
}

// A long start key is kept cut, and told apart from another with the same
// start by its hash.
func TestWatchList_LongStartKeys(t *testing.T) {
	l := newWatchList(8)
	prefix := strings.Repeat("p", MaxWatchKeyLen)
	k1, k2 := WatchKey{StartKey: prefix + "1"}, WatchKey{StartKey: prefix + "2"}
	l.add("g", k1, RunawayKill, at(0), at(10))
	_, ok := l.lookup("g", k1, at(1))
	assert.True(t, ok)
	_, ok = l.lookup("g", k2, at(1))
	assert.False(t, ok, "same first bytes, another key")
	_, ok = l.lookup("g", WatchKey{StartKey: prefix}, at(1))
	assert.False(t, ok, "the cut key itself is another key")

	ws := l.live(at(1))
	require.Len(t, ws, 1)
	assert.Len(t, ws[0].StartKey, MaxWatchKeyLen, "at most MaxWatchKeyLen bytes kept")
	assert.True(t, ws[0].StartKeyCut)
}

func TestWatchList_Live(t *testing.T) {
	l := newWatchList(8)
	l.add("b", WatchKey{TaskID: 9}, RunawayKill, at(0), at(20))
	l.add("a", WatchKey{StartKey: "k\xff"}, RunawayDryRun, at(0), at(10))
	l.add("a", WatchKey{TaskID: 1}, RunawayCooldown, at(0), at(3))
	assert.Equal(t, []RunawayWatch{
		{Group: "a", StartKey: []byte("k\xff"), Action: RunawayDryRun, Expires: at(10)},
		{Group: "b", TaskID: 9, Action: RunawayKill, Expires: at(20)},
	}, l.live(at(5)), "live ones only, soonest first")
	assert.Equal(t, 2, l.len())
}

// Random adds, lookups and time steps against a model: a map of identity
// to (action, expiry) that drops the soonest-expiring entry when full.
// Expiries are distinct, so that the entry to evict is never a tie.
func TestWatchList_RandomAgainstModel(t *testing.T) {
	rng := newRand(t)
	type entry struct {
		action RunawayAction
		until  time.Time
	}
	actions := []RunawayAction{RunawayDryRun, RunawayCooldown, RunawayKill}
	for round := range *roundFlag {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			max := 1 + rng.IntN(8)
			l := newWatchList(max)
			model := map[watchID]entry{}
			now := t0
			expire := func() {
				for id, e := range model {
					if !now.Before(e.until) {
						delete(model, id)
					}
				}
			}
			for op := range 2000 {
				group := []string{"a", "b"}[rng.IntN(2)]
				k := WatchKey{StartKey: fmt.Sprint(rng.IntN(12))}
				if rng.IntN(3) == 0 {
					k = WatchKey{TaskID: uint64(1 + rng.IntN(12))}
				}
				id := l.id(group, k)
				switch rng.IntN(3) {
				case 0:
					now = now.Add(time.Duration(rng.IntN(5)) * time.Second)
				case 1:
					a := actions[rng.IntN(3)]
					until := now.Add(time.Duration(1+rng.IntN(30))*time.Second + time.Duration(op)) // distinct
					l.add(group, k, a, now, until)
					expire()
					if _, ok := model[id]; !ok && len(model) >= max {
						var soonest watchID
						first := true
						for mid, e := range model {
							if first || e.until.Before(model[soonest].until) {
								soonest, first = mid, false
							}
						}
						delete(model, soonest)
					}
					model[id] = entry{a, until}
				case 2:
					a, ok := l.lookup(group, k, now)
					expire()
					e, want := model[id]
					require.Equal(t, want, ok, "op %d: lookup %s %+v", op, group, k)
					assert.Equal(t, e.action, a)
				}
				require.LessOrEqual(t, l.len(), max, "op %d", op)
			}
			expire()
			assert.Len(t, l.live(now), len(model))
		})
	}
}

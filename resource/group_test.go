package resource

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/readpool"
)

var defaultConfig = GroupConfig{Name: DefaultGroup, Burstable: true, Priority: PriorityMedium}

func TestManager_DefaultGroupAlwaysExists(t *testing.T) {
	m := NewManager()
	cfg, ok := m.Get(DefaultGroup)
	require.True(t, ok)
	assert.Equal(t, defaultConfig, cfg, "unlimited, burstable, medium")
	assert.Equal(t, []GroupConfig{defaultConfig}, m.List())
	assert.Same(t, m.Default(), m.Resolve(DefaultGroup))
	assert.Equal(t, DefaultGroup, m.Default().Name())

	err := m.Delete(DefaultGroup)
	assert.ErrorIs(t, err, ErrDefaultGroup)
	_, ok = m.Get(DefaultGroup)
	assert.True(t, ok, "still there")
	assert.Len(t, m.List(), 1)
}

func TestManager_PutGetListDelete(t *testing.T) {
	m := NewManager()
	require.NoError(t, m.Put(GroupConfig{Name: "oltp", RUPerSec: 3000, Burstable: true, Priority: PriorityHigh}))
	require.NoError(t, m.Put(GroupConfig{Name: "batch", RUPerSec: 500})) // Priority 0 = medium
	require.NoError(t, m.Put(GroupConfig{Name: "analytics", RUPerSec: 1000, Priority: PriorityLow}))

	cfg, ok := m.Get("batch")
	require.True(t, ok)
	assert.Equal(t, GroupConfig{Name: "batch", RUPerSec: 500, Priority: PriorityMedium}, cfg, "priority 0 is stored as medium")
	_, ok = m.Get("nope")
	assert.False(t, ok)
	_, ok = m.Get("")
	assert.False(t, ok)

	var names []string
	for _, c := range m.List() {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"analytics", "batch", DefaultGroup, "oltp"}, names, "by name")

	// List returns copies.
	l := m.List()
	l[0].RUPerSec = 1
	cfg, _ = m.Get("analytics")
	assert.EqualValues(t, 1000, cfg.RUPerSec)

	require.NoError(t, m.Delete("batch"))
	_, ok = m.Get("batch")
	assert.False(t, ok)
	assert.Len(t, m.List(), 3)
	assert.ErrorIs(t, m.Delete("batch"), ErrNoGroup, "deleted already")
	assert.ErrorIs(t, m.Delete("never"), ErrNoGroup)
	assert.ErrorContains(t, m.Delete("never"), `"never"`, "the error names the group")
	assert.ErrorIs(t, m.Delete(""), ErrNoGroup)

	// A deleted name may be created again.
	require.NoError(t, m.Put(GroupConfig{Name: "batch", RUPerSec: 7}))
	cfg, _ = m.Get("batch")
	assert.EqualValues(t, 7, cfg.RUPerSec)
}

func TestManager_PutValidates(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    GroupConfig
		fields []string // each must be named in the error
	}{
		{"empty name", GroupConfig{}, []string{"Name"}},
		{"name too long", GroupConfig{Name: strings.Repeat("x", MaxNameLen+1)}, []string{"Name", fmt.Sprint(MaxNameLen)}},
		{"name multibyte too long", GroupConfig{Name: strings.Repeat("é", MaxNameLen/2+1)}, []string{"Name"}},
		{"name with a NUL", GroupConfig{Name: "a\x00b"}, []string{"Name"}},
		{"name with a newline", GroupConfig{Name: "a\nb"}, []string{"Name"}},
		{"name with an escape", GroupConfig{Name: "\x1b[31mred"}, []string{"Name"}},
		{"name not UTF-8", GroupConfig{Name: "a\xffb"}, []string{"Name"}},
		{"name with U+FFFD", GroupConfig{Name: "a\uFFFDb"}, []string{"Name"}},
		{"negative RU/s", GroupConfig{Name: "g", RUPerSec: -1}, []string{"RUPerSec"}},
		{"NaN RU/s", GroupConfig{Name: "g", RUPerSec: math.NaN()}, []string{"RUPerSec"}},
		{"+Inf RU/s", GroupConfig{Name: "g", RUPerSec: math.Inf(1)}, []string{"RUPerSec"}},
		{"-Inf RU/s", GroupConfig{Name: "g", RUPerSec: math.Inf(-1)}, []string{"RUPerSec"}},
		{"priority 3", GroupConfig{Name: "g", Priority: 3}, []string{"Priority", "3"}},
		{"priority -1", GroupConfig{Name: "g", Priority: -1}, []string{"Priority"}},
		{"priority 17", GroupConfig{Name: "g", Priority: 17}, []string{"Priority"}},
		{"everything at once", GroupConfig{Name: "", RUPerSec: math.NaN(), Priority: 3}, []string{"Name", "RUPerSec", "Priority"}},
		{"bad name and RU/s", GroupConfig{Name: "\t", RUPerSec: -5}, []string{"Name", "RUPerSec"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewManager()
			err := m.Put(c.cfg)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidGroup)
			for _, f := range c.fields {
				assert.Contains(t, err.Error(), f)
			}
			assert.Len(t, m.List(), 1, "nothing created")
		})
	}
	t.Run("valid edge cases", func(t *testing.T) {
		m := NewManager()
		for _, cfg := range []GroupConfig{
			{Name: strings.Repeat("x", MaxNameLen)},
			{Name: "é"},
			{Name: "with space"},
			{Name: "日本語"},
			{Name: "zero", RUPerSec: 0},
			{Name: "fractional", RUPerSec: 0.5},
			{Name: "a million", RUPerSec: 1e6},
			{Name: "low", Priority: PriorityLow},
			{Name: "high", Priority: PriorityHigh},
		} {
			assert.NoError(t, m.Put(cfg), "%q", cfg.Name)
		}
	})
	t.Run("an invalid update leaves the group as it was", func(t *testing.T) {
		m := NewManager()
		require.NoError(t, m.Put(GroupConfig{Name: "g", RUPerSec: 10}))
		assert.ErrorIs(t, m.Put(GroupConfig{Name: "g", RUPerSec: -10}), ErrInvalidGroup)
		cfg, _ := m.Get("g")
		assert.EqualValues(t, 10, cfg.RUPerSec)
	})
}

func TestManager_MaxGroups(t *testing.T) {
	m := NewManager()
	for i := range MaxGroups - 1 { // the default group is one
		require.NoError(t, m.Put(GroupConfig{Name: fmt.Sprintf("g%04d", i)}))
	}
	require.Len(t, m.List(), MaxGroups)
	err := m.Put(GroupConfig{Name: "one-too-many"})
	assert.ErrorIs(t, err, ErrTooManyGroups)
	assert.ErrorContains(t, err, fmt.Sprint(MaxGroups))
	_, ok := m.Get("one-too-many")
	assert.False(t, ok)
	assert.Len(t, m.List(), MaxGroups)

	assert.NoError(t, m.Put(GroupConfig{Name: "g0000", RUPerSec: 5}), "updating an existing group needs no room")
	require.NoError(t, m.Delete("g0001"))
	assert.NoError(t, m.Put(GroupConfig{Name: "one-too-many"}), "a delete makes room")
	assert.ErrorIs(t, m.Put(GroupConfig{Name: "two-too-many"}), ErrTooManyGroups)
}

func TestManager_Resolve(t *testing.T) {
	m := NewManager()
	require.NoError(t, m.Put(GroupConfig{Name: "a", RUPerSec: 100, Priority: PriorityHigh}))
	a := m.Resolve("a")
	assert.Equal(t, "a", a.Name())
	assert.Same(t, a, m.Resolve("a"), "one live object per group")
	for _, name := range []string{"", "nope", "A", " a", DefaultGroup} {
		assert.Same(t, m.Default(), m.Resolve(name), "%q", name)
	}

	// Put on an existing name updates it at runtime, in the same object.
	require.NoError(t, m.Put(GroupConfig{Name: "a", RUPerSec: 200, Burstable: true}))
	assert.Same(t, a, m.Resolve("a"))
	assert.Equal(t, GroupConfig{Name: "a", RUPerSec: 200, Burstable: true, Priority: PriorityMedium}, a.Config())

	// A deleted group's object runs by the default group's config.
	require.NoError(t, m.Delete("a"))
	assert.Equal(t, "a", a.Name())
	assert.Equal(t, defaultConfig, a.Config())
	assert.Same(t, m.Default(), m.Resolve("a"))
	// Re-created, it is a new group; the old object stays deleted.
	require.NoError(t, m.Put(GroupConfig{Name: "a", RUPerSec: 1, Priority: PriorityLow}))
	assert.NotSame(t, a, m.Resolve("a"))
	assert.Equal(t, defaultConfig, a.Config())
	assert.Equal(t, PriorityLow, m.Resolve("a").Config().Priority)
}

// A deleted group's tasks run as the default group: its class and no limit.
func TestManager_DeletedGroupIsScheduledAsDefault(t *testing.T) {
	m, s := newScheduler(t, GroupConfig{Name: "x", RUPerSec: 1, Priority: PriorityHigh})
	x := m.Resolve("x")
	// Empty x's bucket.
	e := entry(x)
	s.Push(e, 0)
	require.Same(t, e, s.Pop(0))
	s.Charge(e, readpool.Usage{Exec: time.Second})
	s.Push(e, 0)
	s.Done(e, 0, 0)
	n, _ := s.Held()
	require.Equal(t, 1, n, "held by x's limit")
	require.True(t, s.Remove(e))
	assert.False(t, s.MayInline(entry(x)))

	require.NoError(t, m.Delete("x"))
	assert.True(t, s.MayInline(entry(x)), "no limit any more")
	e = entry(x)
	s.Push(e, 0)
	n, _ = s.Held()
	assert.Zero(t, n, "not held: the default group is unlimited")
	require.Same(t, e, s.Pop(0))
	assert.EqualValues(t, 1, e.Class>>classShift, "medium, the default group's class")
	s.Done(e, 0, 0)
}

// Going from burstable to limited starts with a full bucket: the group is
// not held for a debt it ran up under another config.
func TestManager_PutLimitStartsWithAFullBucket(t *testing.T) {
	m, s := newScheduler(t, GroupConfig{Name: "g", RUPerSec: 100})
	g := m.Resolve("g")
	e := entry(g)
	s.Push(e, 0)
	require.Same(t, e, s.Pop(0))
	s.Charge(e, readpool.Usage{Exec: time.Second}) // 333 RU: 233 owed
	s.Done(e, 0, 0)
	require.Negative(t, g.tokens.Load())
	require.False(t, s.MayInline(entry(g)))

	require.NoError(t, m.Put(GroupConfig{Name: "g", RUPerSec: 100, Burstable: true}))
	assert.True(t, s.MayInline(entry(g)), "burstable: no limit")
	require.NoError(t, m.Put(GroupConfig{Name: "g", RUPerSec: 100}))
	assert.EqualValues(t, 100*microRU, g.tokens.Load())
	e = entry(g)
	s.Push(e, time.Millisecond)
	n, _ := s.Held()
	assert.Zero(t, n)
	assert.Same(t, e, s.Pop(time.Millisecond))
}

func TestManager_ConcurrentUse(t *testing.T) {
	m := NewManager()
	const goroutines, ops = 16, 300
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Go(func() {
			for j := range ops {
				name := fmt.Sprintf("g%d", (i+j)%8)
				switch j % 6 {
				case 0:
					assert.NoError(t, m.Put(GroupConfig{Name: name, RUPerSec: float64(j), Priority: PriorityLow}))
				case 1:
					if err := m.Delete(name); err != nil {
						assert.ErrorIs(t, err, ErrNoGroup)
					}
				case 2:
					g := m.Resolve(name)
					cfg := g.Config()
					if g == m.Default() {
						assert.Equal(t, defaultConfig, cfg)
					} else {
						assert.Equal(t, name, g.Name())
						assert.Contains(t, []string{name, DefaultGroup}, cfg.Name, "its own, or the default's once deleted")
					}
				case 3:
					l := m.List()
					assert.NotEmpty(t, l)
					assert.LessOrEqual(t, len(l), 9)
				case 4:
					if cfg, ok := m.Get(name); ok {
						assert.Equal(t, name, cfg.Name)
					}
				case 5:
					assert.NotEmpty(t, m.Stats())
				}
			}
		})
	}
	wg.Wait()
	_, ok := m.Get(DefaultGroup)
	assert.True(t, ok)
}

func TestRU_Model(t *testing.T) {
	for _, c := range []struct {
		name    string
		exec    time.Duration
		bytes   int64
		request bool
		want    float64
	}{
		{"3 ms of step time", 3 * time.Millisecond, 0, false, 1},
		{"64 KiB read", 0, 64 << 10, false, 1},
		{"a request", 0, 0, true, 1.0 / 8},
		{"8 requests", 0, 0, true, 0.125},
		{"nothing", 0, 0, false, 0},
		{"1 ms", time.Millisecond, 0, false, 1.0 / 3},
		{"1 MiB", 0, 1 << 20, false, 16},
		{"all three add up", 6 * time.Millisecond, 128 << 10, true, 4.125},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.InDelta(t, c.want, RU(c.exec, c.bytes, c.request), 1e-12)
		})
	}
	assert.Equal(t, 1.0, RU(RUExec, 0, false))
	assert.Equal(t, 1.0, RU(0, RUBytes, false))
	assert.Equal(t, 1.0/RURequests, RU(0, 0, true))
}

// The scheduler charges each step's RU to its group: total, virtual time
// (RU ÷ share), bucket, and the one request charge on the first step only.
func TestScheduler_ChargeAccountsRU(t *testing.T) {
	m, s := newScheduler(t, GroupConfig{Name: "g", RUPerSec: 500})
	var now time.Duration
	m.clock = func() time.Duration { return now }
	g := m.Resolve("g")
	e := entry(g)
	s.Charge(e, readpool.Usage{Exec: 3 * time.Millisecond, Bytes: 64 << 10, First: true})
	s.Charge(e, readpool.Usage{Exec: 3 * time.Millisecond, Rows: 1000})
	st := groupStats(t, m, "g")
	assert.InDelta(t, 3.125, st.RU, 1e-9)
	assert.InDelta(t, 3.125, st.RULastSecond, 1e-9)
	assert.Equal(t, time.Duration(3.125/500*float64(time.Second)), st.VirtualTime)
	assert.EqualValues(t, (500-3.125)*microRU, g.tokens.Load())

	// An unlimited group competes with UnlimitedShare and has no bucket.
	d := m.Default()
	s.Charge(entry(d), readpool.Usage{Exec: 30 * time.Millisecond})
	assert.Equal(t, time.Duration(10.0/UnlimitedShare*float64(time.Second)), time.Duration(d.vtime.Load()))
	assert.Zero(t, d.tokens.Load())

	// An entry without a group (a nil or foreign Tag) is the default's.
	before := groupStats(t, m, DefaultGroup).RU
	s.Charge(&readpool.Entry{}, readpool.Usage{Exec: 3 * time.Millisecond})
	s.Charge(&readpool.Entry{Tag: "not a group"}, readpool.Usage{Exec: 3 * time.Millisecond})
	s.Charge(&readpool.Entry{Tag: (*Group)(nil)}, readpool.Usage{Exec: 3 * time.Millisecond})
	assert.InDelta(t, before+3, groupStats(t, m, DefaultGroup).RU, 1e-9)
}

func TestStats_RULastSecondSlides(t *testing.T) {
	m, s := newScheduler(t, GroupConfig{Name: "g", RUPerSec: 1000, Burstable: true})
	var now time.Duration
	m.clock = func() time.Duration { return now }
	e := entry(m.Resolve("g"))
	charge := func(ru float64) {
		s.Charge(e, readpool.Usage{Exec: time.Duration(ru * float64(RUExec))})
	}
	last := func() float64 { return groupStats(t, m, "g").RULastSecond }

	now = 50 * time.Millisecond
	charge(1)
	now = 550 * time.Millisecond
	charge(2)
	assert.InDelta(t, 3, last(), 1e-9)
	now = 999 * time.Millisecond
	assert.InDelta(t, 3, last(), 1e-9)
	now = 1050 * time.Millisecond // the first slot, 0-100 ms, is out
	assert.InDelta(t, 2, last(), 1e-9)
	charge(4) // the reused slot starts from zero
	assert.InDelta(t, 6, last(), 1e-9)
	now = 1599 * time.Millisecond
	assert.InDelta(t, 4, last(), 1e-9)
	now = 10 * time.Second
	assert.Zero(t, last())
	assert.InDelta(t, 7, groupStats(t, m, "g").RU, 1e-9, "the total stays")
}

func TestStats_Figures(t *testing.T) {
	m := NewManager()
	require.NoError(t, m.Put(GroupConfig{Name: "b", RUPerSec: 250, Priority: PriorityLow}))
	require.NoError(t, m.Put(GroupConfig{Name: "a", Burstable: true, Priority: PriorityHigh}))
	st := m.Stats()
	require.Len(t, st, 3)
	assert.Equal(t, []string{"a", "b", DefaultGroup}, []string{st[0].Name, st[1].Name, st[2].Name})
	assert.Equal(t, GroupStats{Name: "a", Priority: "high", Burstable: true}, st[0])
	assert.Equal(t, GroupStats{Name: "b", Priority: "low", RUPerSec: 250}, st[1])
	assert.Equal(t, GroupStats{Name: DefaultGroup, Priority: "medium", Burstable: true}, st[2])
}

func TestErrors_AreDistinct(t *testing.T) {
	errs := []error{ErrInvalidGroup, ErrTooManyGroups, ErrNoGroup, ErrDefaultGroup, ErrInvalidRunaway}
	for i, a := range errs {
		assert.True(t, strings.HasPrefix(a.Error(), "resource: "), a.Error())
		for j, b := range errs {
			assert.Equal(t, i == j, errors.Is(a, b))
		}
	}
}

// Every RU/s that Put accepts must give a working limit. The bucket is kept
// in int64 micro-RU: a limit above MaxInt64/1e6 (~9.2e12 RU/s) overflows
// it, and the group's tasks are held for ever; a limit so small that a
// refill rounds to nothing never refills. Either Put refuses such a limit,
// or a task of the group runs.
func TestManager_EveryAcceptedLimitRuns(t *testing.T) {
	for _, ru := range []float64{1e9, 1e13, 1e18, math.MaxFloat64, 1e-3, 1e-7, math.SmallestNonzeroFloat64} {
		t.Run(fmt.Sprint(ru), func(t *testing.T) {
			m, s := newScheduler(t)
			err := m.Put(GroupConfig{Name: "g", RUPerSec: ru})
			if err != nil {
				assert.ErrorIs(t, err, ErrInvalidGroup)
				assert.ErrorContains(t, err, "RUPerSec")
				return
			}
			e := entry(m.Resolve("g"))
			var now time.Duration
			s.Push(e, now)
			for range 50 {
				if got := s.Pop(now); got != nil {
					require.Same(t, e, got)
					return
				}
				n, until := s.Held()
				require.Equal(t, 1, n)
				now = max(now, until)
			}
			tokens := m.Resolve("g").tokens.Load()
			assert.Fail(t, "held for ever", "a non-burstable group at %g RU/s accepted by Put; still held at %v, tokens %d micro-RU", ru, now, tokens)
		})
	}
}

func TestStats_JSON(t *testing.T) {
	m := NewManager()
	require.NoError(t, m.Put(GroupConfig{Name: "g", RUPerSec: 5}))
	b, err := json.Marshal(m.Stats())
	require.NoError(t, err)
	for _, field := range []string{"name", "priority", "ru_per_sec", "burstable", "ru", "ru_last_second", "queued", "running", "held", "virtual_time_ns", "throttled_ns", "rejected_busy"} {
		assert.Contains(t, string(b), `"`+field+`":`)
	}
	var back []GroupStats
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, m.Stats(), back)

	b, err = json.Marshal(GroupConfig{Name: "g", RUPerSec: 5, Burstable: true, Priority: PriorityHigh})
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"g","ru_per_sec":5,"burstable":true,"priority":"high"}`, string(b))
}

package bench

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

func TestSchedule_FixedDue(t *testing.T) {
	start := time.Unix(1_000, 0)
	s := schedule{arrival: arrivalFixed, interval: 200 * time.Microsecond, offset: 70 * time.Microsecond}
	for n, want := range []time.Duration{70, 270, 470, 670} {
		// Under fixed arrival when the last Get returned does not matter.
		for _, prev := range []time.Time{{}, start, start.Add(time.Hour)} {
			assert.Equal(t, start.Add(want*time.Microsecond), s.due(start, int64(n), prev), "Get %d", n)
		}
	}
	assert.Equal(t, start.Add(70*time.Microsecond+time.Second), s.due(start, 5_000, time.Time{}), "no drift")
}

// TestSchedule_FixedNeverSkipsWhenLate plays a client through its
// schedule on paper, as pacedGets does: it issues each Get when it is due
// or, if the last Get returned later, then; every Get takes 3 intervals.
// The Gets stay due one interval apart, none skipped however late the
// client, and each one's latency from when it was due grows and is never
// below its service time.
func TestSchedule_FixedNeverSkipsWhenLate(t *testing.T) {
	const interval, service = 200 * time.Microsecond, 600 * time.Microsecond
	start := time.Unix(1_000, 0)
	s := schedule{arrival: arrivalFixed, interval: interval, offset: 30 * time.Microsecond}
	var end time.Time
	prevE2E := time.Duration(-1)
	for n := range int64(50) {
		due := s.due(start, n, end)
		require.Equal(t, start.Add(s.offset+time.Duration(n)*interval), due, "Get %d is due in its own slot", n)
		call := due
		if end.After(due) {
			call = end // late: issued at once
		}
		end = call.Add(service)
		e2e := end.Sub(due)
		assert.GreaterOrEqual(t, e2e, service, "Get %d", n)
		assert.Greater(t, e2e, prevE2E, "Get %d: the client falls further behind", n)
		prevE2E = e2e
	}
	assert.Equal(t, 49*(service-interval)+service, prevE2E, "the backlog shows in the latency")
}

func TestSchedule_ThinkDue(t *testing.T) {
	start := time.Unix(1_000, 0)
	s := schedule{arrival: arrivalThink, interval: 200 * time.Microsecond, offset: 50 * time.Microsecond}
	assert.Equal(t, start.Add(50*time.Microsecond), s.due(start, 0, time.Time{}), "Get 0 at the offset")
	prev := start.Add(3 * time.Millisecond)
	assert.Equal(t, prev.Add(200*time.Microsecond), s.due(start, 7, prev), "think after the last returned")
}

func TestSchedule_Rate(t *testing.T) {
	assert.InDelta(t, 5_000.0, schedule{interval: 200 * time.Microsecond}.rate(), 1e-9)
	assert.InDelta(t, 500.0, oltpSchedule(2*time.Millisecond, 1, 4).rate(), 1e-9, "one client of four")
	assert.True(t, math.IsInf(schedule{}.rate(), 1), "no interval: unbounded")
}

// TestGetSchedule_Offsets checks noisy's schedules: under fixed arrival
// each client's phase is in [0, --think), drawn from the seed — the same
// seed, the same phases; another seed, others — and under think arrival
// the clients are staggered evenly.
func TestGetSchedule_Offsets(t *testing.T) {
	const think = 200 * time.Microsecond
	cfg := &besideFlags{arrival: arrivalFixed, think: think, clients: clientsFlag{4}}
	offsets := func(seed uint64) []time.Duration {
		var out []time.Duration
		for i := range cfg.clients.n {
			s := getSchedule(cfg, newRand(seed, uint64(i), offsetStream), i)
			assert.Equal(t, schedule{arrival: arrivalFixed, interval: think, offset: s.offset}, s)
			out = append(out, s.offset)
		}
		return out
	}
	first := offsets(1)
	t.Logf("seed 1: offsets %v", first)
	for _, o := range first {
		assert.GreaterOrEqual(t, o, time.Duration(0))
		assert.Less(t, o, think)
	}
	assert.Equal(t, first, offsets(1), "deterministic from the seed")
	assert.NotEqual(t, first, offsets(2), "another seed, other phases")
	sorted := slices.Compact(slices.Sorted(slices.Values(first)))
	assert.Len(t, sorted, len(first), "the clients do not fire together")

	cfg.arrival = arrivalThink
	for i, want := range []time.Duration{0, 50, 100, 150} {
		assert.Equal(t, want*time.Microsecond, getSchedule(cfg, newRand(1, uint64(i), offsetStream), i).offset)
	}
	cfg.think = 0
	assert.Zero(t, getSchedule(cfg, newRand(1, 0, offsetStream), 3).offset, "--think 0 under think arrival")
}

// TestRun_Arrival runs noisy briefly, without its quiet phase, under each
// arrival on one scheduler: its Get row has the pacing fields (in the JSON
// and in the table's "get e2e" and "get service" rows), its scan row none,
// and every Get's latency from when it was due is at least its service
// time.
func TestRun_Arrival(t *testing.T) {
	for _, arrival := range arrivals {
		t.Run(arrival, func(t *testing.T) {
			var mu sync.Mutex
			var gets [][2]time.Duration // e2e, service
			w := lookup(t, "noisy")
			cfg := parseRun(t, w, "--duration", "300ms", "--warmup", "0", "--schedulers", "mlfq",
				"--arrival", arrival, "--no-quiet")
			cfg.onPacedGet = func(e2e, service time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				gets = append(gets, [2]time.Duration{e2e, service})
			}
			rep, out := runWith(t, cfg, w, &testStores{dir: t.TempDir()})
			require.Len(t, rep.Results, 2)

			get, scan := rep.Results[0], rep.Results[1]
			require.Equal(t, "get", get.Class)
			require.NotNil(t, get.Pacing, "the Gets are paced")
			assert.Nil(t, scan.Pacing, "the scans are not")
			p := get.Pacing
			assert.Equal(t, arrival, p.Arrival)
			assert.InDelta(t, 2/200e-6, p.OfferedPerSec, 1e-6, "--clients / --think")
			require.Positive(t, get.Ops)
			assert.InEpsilon(t, get.OpsPerSec/p.OfferedPerSec*100, p.AchievedPct, 1e-9)
			if arrival == arrivalThink {
				assert.LessOrEqual(t, p.Overdue, int64(2), "under think arrival a client has at most one Get due at a time")
			}
			// The Gets the phase's end cut off are in the e2e percentiles
			// with their latency so far (possibly tiny) and not in the
			// service's, so the percentiles below the maximum are ordered
			// only when none was cut off; the maximum always is.
			for i, pair := range [][2]float64{
				{get.MaxUs, p.ServiceMaxUs},
				{get.P50us, p.ServiceP50us}, {get.P99us, p.ServiceP99us}, {get.P999us, p.ServiceP999us},
			} {
				assert.Positive(t, pair[1], "a service time")
				if i == 0 || p.Overdue == 0 {
					assert.GreaterOrEqual(t, pair[0], pair[1], "e2e percentiles are at least the service's")
				}
			}

			mu.Lock()
			defer mu.Unlock()
			assert.Len(t, gets, int(get.Ops+get.Errors), "the hook saw every Get recorded")
			below := 0
			for _, g := range gets {
				if g[0] < g[1] {
					below++
				}
			}
			assert.Zero(t, below, "Gets of %d whose e2e is below their service time", len(gets))

			assert.Regexp(t, `(?m)^workload +scheduler +class +ops/s +offered/s +achieved +rows/s +p50 +p99 +p99.9 +max +errors$`, out)
			assert.Regexp(t, `(?m)^noisy +mlfq +get e2e +\d+ +10000 +[0-9.]+% +\S+ +\S+ +\S+ +\S+ +0$`, out)
			assert.Regexp(t, `(?m)^noisy +mlfq +get service +\S+ +\S+ +\S+ +\S+$`, out)
			assert.Regexp(t, `(?m)^noisy +mlfq +scan +\d+ +\d+ +\S+ +\S+ +\S+ +\S+ +0$`, out, "the scans with their rows/s")
		})
	}
}

// TestPacedGets_AStallAtThePhasesEndShows: a client kept busy for 150 ms
// (as a stalled Get or a client off its P would be) shows it in the
// latencies of the Gets due meanwhile — also when the stall runs past the
// phase's end, where those Gets are never issued: they count as overdue,
// with their latency so far, and not as operations.
func TestPacedGets_AStallAtThePhasesEndShows(t *testing.T) {
	db, err := kv.Open("", &kv.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { assert.NoError(t, db.Close()) }()
	for i := range int64(100) {
		require.NoError(t, db.Set(appendKey(nil, i), []byte("v")))
	}
	run := func(stallAt time.Duration) summary {
		var phaseStart time.Time
		stalled := false
		cfg := &Config{}
		cfg.onPacedGet = func(time.Duration, time.Duration) {
			if !stalled && time.Since(phaseStart) > stallAt {
				stalled = true
				time.Sleep(150 * time.Millisecond)
			}
		}
		e := &env{db: db, cfg: cfg, keys: newKeySpace(100), seed: 1}
		s := schedule{arrival: arrivalFixed, interval: time.Millisecond}
		phaseStart = time.Now()
		ph := runPhase(context.Background(), nil, []client{pacedGets(e, 0, s)}, 400*time.Millisecond)
		return ph.merged().summarize(classGet, ph.elapsed)
	}
	early, late := run(50*time.Millisecond), run(300*time.Millisecond)
	assert.Greater(t, early.max, 100*time.Millisecond, "a stall in the phase shows")
	assert.Greater(t, late.max, 50*time.Millisecond, "so does one that runs past its end")
	assert.Greater(t, late.overdue, int64(30), "the Gets due during the stall are overdue")
	// Early, the client has 200 ms to catch up: at most the few Gets due
	// as the phase ended (a handful on a loaded machine, where it saw 6),
	// far from the hundred of a stall across the end.
	assert.LessOrEqual(t, early.overdue, int64(15), "early: at most the Gets due as the phase ended")
}

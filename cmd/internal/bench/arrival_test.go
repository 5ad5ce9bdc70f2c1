package bench

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
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

// pacedStore is a kv.Store with Gets only, for a client on schedule s:
// a Get takes service, but never ends before the client's next Get is
// due. On synctest's clock, which moves only when every goroutine is
// blocked, a client that is early would wait for its due time forever:
// sleepUntil yields, not sleeps, for the last spinWithin.
type pacedStore struct {
	kv.Store
	s       schedule
	service time.Duration
	start   time.Time // when Get 0 was called: the client's start
	n       int64     // Gets called
}

func (p *pacedStore) Get(ctx context.Context, _ []byte) ([]byte, error) {
	now := time.Now()
	if p.n == 0 {
		p.start = now
	}
	p.n++
	end := now.Add(p.service)
	if next := p.s.due(p.start, p.n, time.Time{}); end.Before(next) {
		end = next
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(end.Sub(now)):
		return []byte("v"), nil
	}
}

// TestPacedGets_AStallShows: a client kept busy for 150 ms (as a stalled
// Get or a client off its P would be) shows it in the latencies of the
// Gets due meanwhile — also when the stall runs past the phase's end,
// where those Gets are never issued: they count as overdue, with their
// latency so far, and not as operations. On synctest's clock, one Get due
// every millisecond, each taking 200 µs: every figure is exact. (The real
// clock's share of the schedule is BenchmarkSleepUntil's.)
func TestPacedGets_AStallShows(t *testing.T) {
	const (
		interval = time.Millisecond
		service  = 200 * time.Microsecond
		stall    = 150 * time.Millisecond
		phase    = 400*time.Millisecond + interval/2 // no Get ends as the phase does
	)
	run := func(t *testing.T, stallAfter time.Duration) (sum summary, e2es []time.Duration) {
		synctest.Test(t, func(t *testing.T) {
			s := schedule{arrival: arrivalFixed, interval: interval}
			start := time.Now()
			stalled := false
			cfg := &Config{}
			cfg.onPacedGet = func(e2e, _ time.Duration) {
				e2es = append(e2es, e2e)
				if !stalled && time.Since(start) > stallAfter {
					stalled = true
					time.Sleep(stall)
				}
			}
			e := &env{db: &pacedStore{s: s, service: service}, cfg: cfg, keys: newKeySpace(100), seed: 1}
			ph := runPhase(context.Background(), nil, []client{pacedGets(e, 0, s)}, phase)
			sum = ph.merged().summarize(classGet, ph.elapsed)
		})
		return sum, e2es
	}

	t.Run("in the phase", func(t *testing.T) {
		// Get 50 returns at 51 ms and the client stalls until 201 ms. Get
		// 51, due at 51 ms, returns at 201.2 ms; each Get after it gains
		// 800 µs on the schedule, until Get 238, issued at 238.4 ms, ends
		// at 239 ms, when Get 239 is due: on time again.
		sum, e2es := run(t, 50*time.Millisecond)
		require.Len(t, e2es, 400, "Gets 0 to 399 returned")
		assert.Equal(t, time.Millisecond, e2es[50], "on time before the stall")
		assert.Equal(t, 150*time.Millisecond+service, e2es[51], "the first Get due in the stall")
		for n := 52; n <= 237; n++ {
			require.Equal(t, e2es[n-1]-interval+service, e2es[n], "Get %d catches up by 800 µs", n)
		}
		for n := 238; n < 400; n++ {
			require.Equal(t, interval, e2es[n], "Get %d is on time again", n)
		}
		assert.InEpsilon(t, float64(150*time.Millisecond+service), float64(sum.max), 0.01, "the stall shows in the maximum")
		assert.EqualValues(t, 400, sum.ops)
		// Get 400, due at 400 ms, is cut off at 400.5 ms.
		assert.EqualValues(t, 1, sum.overdue, "only the Get in flight as the phase ended")
	})
	t.Run("across the phase's end", func(t *testing.T) {
		// Get 300 returns at 301 ms; the client stalls until 451 ms, past
		// the phase's end at 400.5 ms, and then counts the Gets due at
		// 301 ms to 451 ms, never issued, as overdue.
		sum, e2es := run(t, 300*time.Millisecond)
		require.Len(t, e2es, 301, "Gets 0 to 300 returned")
		assert.EqualValues(t, 301, sum.ops)
		assert.EqualValues(t, 151, sum.overdue, "the Gets due during the stall")
		assert.InEpsilon(t, float64(stall), float64(sum.max), 0.01, "the stall shows in the maximum")
	})
}

// BenchmarkSleepUntil measures how late a paced client's wait for its
// next Get ends on the real clock, for a Get due 200 µs on (a --think of
// 200 µs): the schedule's precision, which the tests cannot assert.
func BenchmarkSleepUntil(b *testing.B) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var late, most time.Duration
	for b.Loop() {
		due := time.Now().Add(200 * time.Microsecond)
		if !sleepUntil(context.Background(), timer, due) {
			b.Fatal("the context ended")
		}
		d := time.Since(due)
		late += d
		most = max(most, d)
	}
	b.ReportMetric(float64(late)/float64(b.N), "late-ns/op")
	b.ReportMetric(float64(most), "max-late-ns")
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/kv"
)

// The ttl workload is a store of login sessions (issue 43): one writer
// sets a new session every 1/--rate, each with a TTL of --ttl
// (kv.Batch.SetWithTTL), and --clients goroutines read sessions that
// still live — one Get every --think each, on a schedule, timed from when
// it was due, as noisy's are. A sampler reads the store's figures every
// second: the sessions live (written within the last TTL), the sessions
// it holds (written, less those the sweeper deleted), the keys the
// sweeper found expired and deleted, and the disk the store uses.
//
// The verdicts under the table, per scheduler, are the issue's: the
// sessions held at most 1.1 × rate × TTL at the end; the disk at most
// twice the live sessions' bytes after the first minute (checked only in
// a phase of a minute or more). The sweeper's cost to the Gets is two
// runs apart: this one, and one with --no-sweep.

const (
	ttlPrefix = "sess/"
	ttlDigits = 12
	// ttlHeldFactor and ttlDiskFactor are the verdicts' bounds.
	ttlHeldFactor = 1.1
	ttlDiskFactor = 2.0
	// ttlDiskAfter is when the disk verdict starts to count.
	ttlDiskAfter = time.Minute
)

// ttlWorkload is the ttl workload, with its flags' defaults.
func ttlWorkload() Workload {
	w := &ttlLoad{samples: map[string][]ttlSample{}}
	w.plain = plain{
		name:    "ttl",
		short:   "login sessions written with a TTL at a steady rate, read while they live, swept when they expire",
		long:    ttlLong,
		classes: []class{classGet, classUpdate, classExpired},
	}
	return w
}

const ttlLong = `ttl is a store of login sessions: one writer sets a new session every
1/--rate seconds, with a TTL of --ttl (kv.Batch.SetWithTTL), its value
--value-size bytes; --clients goroutines each read one session every
--think, drawn from those written within the last half TTL (so that it
lives), on a schedule of their own, timed from when the Get was due. The
"update" row is the writer's sets, the "get" row the reads. The "expired
get" row is a check: every 10 ms a Get of a session that expired at least
a second before, which must be missing; one returned is an error.

Every second a sampler reads the store: the sessions live (written within
the last TTL), the sessions it holds (written, less the keys the sweeper
deleted), the keys the sweeper found expired and deleted per second, and
the disk the store uses. Under the table, per scheduler: the sessions held
at the end against rate × TTL (want ≤ 1.1×), the disk after the first
minute against the live sessions' bytes (want ≤ 2×; needs --duration of a
minute or more, and a small --keys, as the loaded keys are not sessions),
and the sweeper's rates. Run it again with --no-sweep to see the Gets
without the sweeper. There is no warm-up.`

type ttlLoad struct {
	plain
	clients clientsFlag
	rate    float64
	ttl     time.Duration
	think   time.Duration
	valSize int

	mu      sync.Mutex
	cur     []ttlSample            // the running phase's
	samples map[string][]ttlSample // by scheduler, its measured phase's
}

// ttlSample is the store as the sampler saw it at one second.
type ttlSample struct {
	at       time.Duration // since the phase began
	written  int64         // sessions set so far
	live     int64         // of them, written within the last TTL
	expired  int64         // keys the sweeper found expired, so far (Stats.Sweep)
	swept    int64         // keys it deleted, so far
	disk     int64         // bytes the store uses on disk
	tables   int64         // of them, its tables'
	wal      int64         // of them, its write-ahead logs', live and kept for reuse
	measured bool          // the store's figures (an embedded store's)
	sweeping bool          // its sweeper runs (not --no-sweep)
}

func (w *ttlLoad) Flags(fs *pflag.FlagSet) {
	w.clients.add(fs, "client goroutines reading live sessions, one Get every --think each")
	fs.Float64Var(&w.rate, "rate", 1000, "sessions written per second")
	fs.DurationVar(&w.ttl, "ttl", 10*time.Second, "each session's TTL")
	fs.DurationVar(&w.think, "think", time.Millisecond, "one reader's interval between two Gets due")
}

func (w *ttlLoad) Validate() error {
	errs := []error{w.clients.validate(1, "")}
	if !(w.rate > 0 && w.rate <= 1e6) {
		errs = append(errs, fmt.Errorf("--rate must be above 0 and at most 1,000,000 sessions a second, not %v", w.rate))
	}
	if w.ttl < time.Millisecond {
		errs = append(errs, fmt.Errorf("--ttl must be at least 1ms, not %v", w.ttl))
	}
	if w.think <= 0 {
		errs = append(errs, fmt.Errorf("--think must be positive, not %v", w.think))
	}
	return errors.Join(errs...)
}

// Phases: one measured phase, no warm-up — the first minute is part of
// what it shows.
func (w *ttlLoad) Phases() []Phase {
	return []Phase{{
		Section: w.name, Label: w.name, Stream: streamMeasure, Classes: w.classes,
		Clients: w.phaseClients,
		Before: func(kv.Store) error {
			w.mu.Lock()
			w.cur = nil
			w.mu.Unlock()
			return nil
		},
		After: func(_ kv.Store, m *Measured) {
			w.mu.Lock()
			w.samples[m.sched] = w.cur
			w.mu.Unlock()
		},
	}}
}

// sessions is what the writer has written, for the readers and the
// sampler: sessions 0 … n-1, session i at start + i/rate.
type sessions struct {
	n     atomic.Int64
	start time.Time
}

func (w *ttlLoad) phaseClients(e *env) []client {
	w.valSize = e.cfg.ValueSize
	s := &sessions{start: time.Now()}
	perTTL := int64(w.rate * w.ttl.Seconds())
	cs := []client{w.writer(e, s), w.sampler(e, s), w.expiredReader(e, s)}
	for i := range w.clients.n {
		r := e.rand(i + 1)
		sched := schedule{arrival: arrivalFixed, interval: w.think, offset: time.Duration(r.Int64N(int64(w.think)))}
		cs = append(cs, w.reader(e, s, r, sched, max(perTTL/2, 1)))
	}
	return cs
}

// appendSession appends session n's key.
func appendSession(dst []byte, n int64) []byte {
	dst = append(dst, ttlPrefix...)
	return fmt.Appendf(dst, "%0*d", ttlDigits, n)
}

// writer sets session i at start + i/rate, each with the TTL, timed from
// when it was due.
func (w *ttlLoad) writer(e *env, s *sessions) client {
	r := e.rand(0)
	return func(ctx context.Context, rec *recorder) {
		interval := time.Duration(float64(time.Second) / w.rate)
		rec.pace(classUpdate, arrivalFixed, w.rate)
		timer := time.NewTimer(0)
		defer timer.Stop()
		val := make([]byte, w.valSize)
		var key []byte
		for n := int64(0); ; n++ {
			due := s.start.Add(time.Duration(n) * interval)
			if !sleepUntil(ctx, timer, due) {
				return
			}
			fillValue(r, val)
			key = appendSession(key[:0], n)
			call := time.Now()
			b := e.db.NewBatch()
			b.SetWithTTL(key, val, w.ttl)
			err := e.db.Write(ctx, b)
			end := time.Now()
			if ctx.Err() != nil {
				return
			}
			s.n.Store(n + 1)
			rec.recordPaced(classUpdate, end.Sub(due), end.Sub(call), err)
		}
	}
}

// reader reads, on sched, a session drawn from the last window written.
func (w *ttlLoad) reader(e *env, s *sessions, r *rand.Rand, sched schedule, window int64) client {
	return func(ctx context.Context, rec *recorder) {
		rec.pace(classGet, sched.arrival, sched.rate())
		timer := time.NewTimer(0)
		defer timer.Stop()
		start := time.Now()
		var key []byte
		for n := int64(0); ; n++ {
			due := sched.due(start, n, time.Time{})
			if !sleepUntil(ctx, timer, due) {
				return
			}
			written := s.n.Load()
			if written == 0 {
				continue // nothing to read yet
			}
			key = appendSession(key[:0], written-1-r.Int64N(min(window, written)))
			call := time.Now()
			_, err := e.db.Get(ctx, key)
			end := time.Now()
			if ctx.Err() != nil {
				return
			}
			rec.recordPaced(classGet, end.Sub(due), end.Sub(call), err)
		}
	}
}

// errExpiredRead is an expired session a Get returned: the store's error,
// never the workload's.
var errExpiredRead = errors.New("ttl: a Get returned a session that had expired")

// expiredReader reads, every 10 ms, a session that expired at least a
// second ago (due more than TTL + 1 s before now): it must be missing, and
// one it gets is counted as an error of its "expired get" class.
func (w *ttlLoad) expiredReader(e *env, s *sessions) client {
	r := e.rand(w.clients.n + 1)
	return thinkLoop(10*time.Millisecond, func(ctx context.Context) (class, error) {
		at := time.Since(s.start) - w.ttl - time.Second
		old := min(int64(at.Seconds()*w.rate), s.n.Load())
		if old <= 0 {
			return classExpired, nil // none has expired yet
		}
		_, err := e.db.Get(ctx, appendSession(nil, r.Int64N(old)))
		switch {
		case errors.Is(err, kv.ErrNotFound):
			return classExpired, nil
		case err == nil:
			return classExpired, errExpiredRead
		}
		return classExpired, err
	})
}

// sampler reads the store's figures every second.
func (w *ttlLoad) sampler(e *env, s *sessions) client {
	return func(ctx context.Context, _ *recorder) {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			written, at := s.n.Load(), time.Since(s.start)
			// Session i was due at i/rate: those due within the last TTL live.
			expired := min(max(int64((at-w.ttl).Seconds()*w.rate), 0), written)
			smp := ttlSample{at: at, written: written, live: written - expired}
			if db, ok := e.db.(*kv.DB); ok {
				st := db.Stats()
				smp.expired, smp.swept, smp.disk, smp.measured = st.Sweep.Expired, st.Sweep.Swept, int64(st.Storage.DiskBytes), true
				smp.sweeping, smp.wal = st.Sweep.Enabled, int64(st.Storage.WALDiskBytes)
				for _, l := range st.Storage.Levels {
					smp.tables += int64(l.Bytes)
				}
			}
			w.mu.Lock()
			w.cur = append(w.cur, smp)
			w.mu.Unlock()
		}
	}
}

// Summarize writes, per scheduler, the verdicts and a line every 10 s, and
// gives the Gets' result their Expiry figures for the JSON.
func (w *ttlLoad) Summarize(out io.Writer, rep *Report) error {
	var b strings.Builder
	w.mu.Lock()
	defer w.mu.Unlock()
	perTTL := w.rate * w.ttl.Seconds()
	for i := range rep.Results {
		r := &rep.Results[i]
		smps := w.samples[r.Scheduler]
		if r.Workload != w.name || r.Class != classGet.String() || len(smps) == 0 {
			continue
		}
		r.Expiry = ttlFigures(smps, perTTL, int64(ttlKeyLen+w.valSize))
		b.WriteString(ttlSummary(r.Scheduler, smps, r.Expiry))
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// ttlKeyLen is a session key's length.
const ttlKeyLen = len(ttlPrefix) + ttlDigits

// ttlFigures sums up one scheduler's samples, perTTL sessions live at the
// steady rate, each of row bytes; nil when the store had no figures (not
// the embedded store).
func ttlFigures(smps []ttlSample, perTTL float64, row int64) *Expiry {
	last := smps[len(smps)-1]
	if !last.measured {
		return nil
	}
	x := &Expiry{RateTTL: perTTL, Written: last.written, Live: last.live, Held: last.written - last.swept, Sweeping: last.sweeping,
		DiskBytes: last.disk, TableBytes: last.tables, WALDiskBytes: last.wal}
	x.HeldFactor = float64(x.Held) / perTTL
	if secs := last.at.Seconds(); secs > 0 && last.sweeping {
		x.ExpiredPerSec, x.SweptPerSec = float64(last.expired)/secs, float64(last.swept)/secs
	}
	for _, s := range smps {
		if s.at >= ttlDiskAfter && s.live > 0 {
			x.DiskFactor = max(x.DiskFactor, float64(s.disk)/float64(s.live*row))
		}
	}
	return x
}

// ttlSummary is the lines of one scheduler's samples, and x their figures.
func ttlSummary(sched string, smps []ttlSample, x *Expiry) string {
	var b strings.Builder
	if x == nil {
		fmt.Fprintf(&b, "\nttl %s: the store has no sweeper figures (not the embedded store)\n", sched)
		return b.String()
	}
	last := smps[len(smps)-1]
	b.WriteString("\n")
	fmt.Fprintf(&b, "ttl %s: at %s:\n", sched, last.at.Round(time.Second))
	for i, s := range smps {
		if (i+1)%10 != 0 && i != len(smps)-1 {
			continue
		}
		fmt.Fprintf(&b, "  %3.0fs  written %d, live %d, held %d, expired found %d, deleted %d, disk %s (tables %s, WAL %s)\n",
			s.at.Seconds(), s.written, s.live, s.written-s.swept, s.expired, s.swept, mib(s.disk), mib(s.tables), mib(s.wal))
	}
	fmt.Fprintf(&b, "ttl %s: sessions held %d at the end, %.2f× rate × TTL (%.0f) (want ≤ %.1f×): %s\n",
		sched, x.Held, x.HeldFactor, x.RateTTL, ttlHeldFactor, verdict(x.HeldFactor <= ttlHeldFactor))
	if x.DiskFactor == 0 {
		fmt.Fprintf(&b, "ttl %s: disk against the live sessions: not judged (the phase was under %s)\n", sched, ttlDiskAfter)
	} else {
		fmt.Fprintf(&b, "ttl %s: disk after the first minute at most %.2f× the live sessions' bytes (want ≤ %.0f×): %s\n",
			sched, x.DiskFactor, ttlDiskFactor, verdict(x.DiskFactor <= ttlDiskFactor))
	}
	if !x.Sweeping {
		fmt.Fprintf(&b, "ttl %s: the sweeper is off (--no-sweep)\n", sched)
	} else if last.at > 0 {
		fmt.Fprintf(&b, "ttl %s: the sweeper found %.0f expired keys/s and deleted %.0f/s\n", sched, x.ExpiredPerSec, x.SweptPerSec)
	}
	return b.String()
}

// mib formats bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

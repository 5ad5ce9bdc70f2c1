package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/coopkv/coopkv/cmd/internal/cli"
	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/readpool"
)

// poolReport is what kvctl pool prints with --json: the endpoint's pool
// figures as they are, and the shares kvctl derives from them.
type poolReport struct {
	Scheduler kv.Scheduler `json:"scheduler"`
	Closed    bool         `json:"closed"`
	// Failed and DiskFull are the store's write health (kv.Stats): a
	// failed store's cause, and whether writes are refused for space.
	Failed   string `json:"failed,omitempty"`
	DiskFull bool   `json:"disk_full,omitempty"`
	// Pool is nil (null) with the direct scheduler, which has no pool.
	Pool *readpool.Stats `json:"pool"`
	// LevelShares is each queue level's share of the step time so far
	// (its time ÷ every level's); nil before the first step.
	LevelShares []float64 `json:"level_shares"`
	// Caches are the store's caches: their sizes in force and hits.
	Caches caches `json:"caches"`
	// Warm is what warming the caches did (kv.Stats.Warm).
	Warm kv.WarmStats `json:"warm"`
	// Sweep is what the deletion of expired keys did (kv.Stats.Sweep).
	Sweep kv.SweepStats `json:"sweep"`
	// Disk is what the store's table reads have met on the disk.
	Disk tableReads `json:"disk"`
}

// caches are the sizes in force of a running store's caches and memtable,
// with their hit rates: what a read costs depends on them more than on
// the scheduler.
type caches struct {
	BlockCacheCapacity int64   `json:"block_cache_capacity"`
	BlockCacheBytes    int64   `json:"block_cache_bytes"`
	BlockCacheHitRate  float64 `json:"block_cache_hit_rate"`
	MemTableSize       uint64  `json:"memtable_size"`
	RowCache           bool    `json:"row_cache"`
	RowCacheCapacity   int64   `json:"row_cache_capacity"`
	RowCacheHitRate    float64 `json:"row_cache_hit_rate"`
}

// tableReads are a running store's table reads (kv.StorageStats): how
// many, how long they took, and whether the disk counts as slow — which
// decides whether a read waiting on it lets the pool run another.
type tableReads struct {
	TableReads    int64         `json:"table_reads"`
	TableReadTime time.Duration `json:"table_read_time_ns"`
	// MeanTableRead is TableReadTime ÷ TableReads, 0 before the first read.
	MeanTableRead  time.Duration `json:"mean_table_read_ns"`
	Slow           bool          `json:"disk_slow"`
	SlowTableReads int64         `json:"slow_table_reads"`
}

// newTableReads takes the table reads' figures from a store's.
func newTableReads(s *kv.StorageStats) tableReads {
	d := tableReads{TableReads: s.TableReads, TableReadTime: s.TableReadTime, Slow: s.DiskSlow, SlowTableReads: s.SlowTableReads}
	if d.TableReads > 0 {
		d.MeanTableRead = d.TableReadTime / time.Duration(d.TableReads)
	}
	return d
}

// newPoolCmd builds "kvctl pool" (GET /stats).
func newPoolCmd(out *output) *cobra.Command {
	var lf liveFlags
	cmd := &cobra.Command{
		Use:   "pool",
		Short: "Show the read pool: workers, queue levels, tasks, latencies",
		Long: `pool shows the read pool of a running store (GET /stats):

  scheduler and workers: the workers (the steps that may run on the CPU
    at once) and at most how many goroutines step tasks, extras
    included (MaxWorkers); busy (workers in use: running a step), parked
    (asleep), extra (temporary workers standing in for steps stuck on
    the CPU or blocked off it), spare;
  blocked: the steps off the CPU, waiting on a slow disk (and Pebble's
    background reads), and the slack: steps beyond them that the CPU
    controller lets run while the CPU has room;
  each queue level: tasks queued, its share of the step time so far (the
    level's time ÷ all levels'), and its steps; level 0's share beside
    its chance, the share the scheduler currently targets for it;
  tasks by outcome: spawned, completed, cancelled, dropped (ended while
    waiting for a worker), panicked, rejected_busy (refused: MaxTasks),
    inline (first step run on the caller's goroutine), bypassed (row-cache
    hits answered on the caller's goroutine without a task);
  queue wait (ready to running) and step time: p50, p99 and max since the
    pool started;
  long steps (past the stuck threshold), preempted steps, yields,
    caller hand-offs (a worker gave its P to the Get caller its step
    readied), steps run by their consumer (a quick scan reader filling
    its own next batches while a worker was idle), and steps run by the
    spare workers (point reads stepped while every worker was busy);
  the caches in force: the block cache's capacity (memtables included),
    what it holds and its hit rate, the memtable size, and the row
    cache's capacity and hit rate;
  the disk: table reads (block-cache misses and compactions' reads),
    their mean latency, and whether the disk counts as slow (the recent
    reads' average at 30 µs or more: a read then lets the pool run
    another meanwhile), with the reads made so.

With the direct scheduler reads run on their callers' goroutines and
there is no pool to show.`,
		Example: `  kvctl pool
  kvctl pool --addr 10.0.0.5:7070
  kvctl pool --json | jq .pool.queue_wait.p99_ns`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st kv.Stats
			if err := lf.call(cmd.Context(), "GET", "/stats", nil, &st); err != nil {
				return err
			}
			rep := poolReport{Scheduler: st.Scheduler, Closed: st.Closed, Failed: st.Failed, DiskFull: st.DiskFull, Pool: st.Pool, Caches: caches{
				BlockCacheCapacity: st.Storage.BlockCacheCapacity, BlockCacheBytes: st.Storage.BlockCacheBytes,
				BlockCacheHitRate: st.Storage.BlockCacheHitRate, MemTableSize: st.Storage.MemTableSize,
				RowCache: st.RowCache.Enabled, RowCacheCapacity: st.RowCache.Capacity, RowCacheHitRate: st.RowCache.HitRate,
			}, Disk: newTableReads(&st.Storage), Warm: st.Warm, Sweep: st.Sweep}
			if st.Pool != nil && st.Pool.Queue.Kind != priorityQueue {
				rep.LevelShares = levelShares(st.Pool.Queue.Levels)
			}
			return out.print.Print(&rep)
		},
	}
	lf.add(cmd)
	return cmd
}

// levelShares is each level's share of the levels' total step time, nil
// when no step has run.
func levelShares(levels []readpool.LevelStats) []float64 {
	var total time.Duration
	for _, l := range levels {
		total += l.Time
	}
	if total <= 0 {
		return nil
	}
	s := make([]float64, len(levels))
	for i, l := range levels {
		s[i] = float64(l.Time) / float64(total)
	}
	return s
}

// priorityQueue is the queue kind of resource control (resource.Scheduler),
// whose levels are the priority classes, most urgent first.
const priorityQueue = "priority"

// className names the priority queue's level i.
func className(i int) string {
	if names := []string{"high", "medium", "low"}; i < len(names) {
		return names[i]
	}
	return strconv.Itoa(i)
}

// WriteText prints the pool's figures as a few small tables.
func (r *poolReport) WriteText(w io.Writer) error {
	t := cli.NewTable(w)
	switch {
	case r.Failed != "":
		t.Printf("store FAILED, writes refused until it is reopened (reads go on): %s\n", r.Failed)
	case r.DiskFull:
		t.Println("disk FULL: writes refused until there is space (reads go on)")
	}
	if r.Pool == nil {
		t.Printf("no read pool (scheduler %s)\n", r.Scheduler)
		return t.Flush()
	}
	p := r.Pool
	t.Printf("scheduler\t%s (queue %s)%s\n", r.Scheduler, p.Queue.Kind, closedNote(r.Closed))
	t.Printf("workers\t%d, at most %d with extras: busy %d (in use), parked %d, extra %d, spare %d\n", p.Workers, p.MaxWorkers, p.Busy, p.Parked, p.Extra, p.Spares)
	t.Printf("blocked\t%d steps waiting on the disk; slack %d (steps the CPU controller lets run beside them)\n", p.Blocked, p.Slack)
	t.Printf("tasks now\tqueued %d, held %d, running %d, pending %d\n", p.Queued, p.Held, p.Running, p.Pending)
	t.Println()
	if p.Queue.Kind == priorityQueue {
		// Resource control queues by priority class, then by group: MLFQ
		// levels and their shares mean nothing there.
		t.Println("class\tqueued")
		for i, l := range p.Queue.Levels {
			t.Printf("%s\t%d\n", className(i), l.Queued)
		}
	} else {
		t.Println("level\tqueued\tshare of step time\tsteps")
		for i, l := range p.Queue.Levels {
			share := "-"
			if r.LevelShares != nil {
				share = percent(r.LevelShares[i])
			}
			t.Printf("%d\t%d\t%s\t%d\n", i, l.Queued, share, l.Steps)
		}
	}
	if p.Queue.Kind == "mlfq" { // other queues have no level-0 target
		t.Printf("level 0\tshare %s, chance (target) %s\n", percent(p.Queue.Level0Share), percent(p.Queue.Chance))
	}
	t.Println()
	t.Println("tasks\tspawned\tcompleted\tcancelled\tdropped\tpanicked\trejected_busy\tinline\tbypassed")
	t.Printf("\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", p.Spawned, p.Completed, p.Cancelled, p.Dropped, p.Panicked, p.RejectedBusy, p.Inline, p.Bypassed)
	t.Println()
	t.Println("\tp50\tp99\tmax\tcount")
	for _, d := range []struct {
		name string
		s    readpool.DurationSummary
	}{{"queue wait", p.QueueWait}, {"step time", p.StepTime}} {
		t.Printf("%s\t%s\t%s\t%s\t%d\n", d.name, shortDur(d.s.P50), shortDur(d.s.P99), shortDur(d.s.Max), d.s.Count)
	}
	t.Println()
	t.Printf("steps\t%d: long %d, preempted %d, yields %d, caller hand-offs %d, stepped by their consumer %d, by the spares %d\n", p.Steps, p.LongSteps, p.Preempted, p.Yields, p.CallerHandoffs, p.SteppedHere, p.SpareSteps)
	t.Printf("local queues\t%d tasks taken in batches, %d stolen\n", p.Batched, p.Stolen)
	t.Println()
	c := &r.Caches
	t.Printf("block cache\t%s of %s (memtables of %s included), hit rate %s\n", size(c.BlockCacheBytes), size(c.BlockCacheCapacity), size(int64(c.MemTableSize)), percent(c.BlockCacheHitRate))
	if c.RowCache {
		t.Printf("row cache\t%s, hit rate %s\n", size(c.RowCacheCapacity), percent(c.RowCacheHitRate))
	} else {
		t.Println("row cache\toff")
	}
	d := &r.Disk
	disk := "fast"
	if d.Slow {
		disk = "slow (a read waiting on it lets another run)"
	}
	t.Printf("table reads\t%d, mean %s; disk %s, %d reads made while slow\n", d.TableReads, shortDur(d.MeanTableRead), disk, d.SlowTableReads)
	t.Println(warmLine(&r.Warm))
	t.Println(sweepLine(&r.Sweep))
	return t.Flush()
}

// closedNote marks figures of a closed store, which /stats still serves.
func closedNote(closed bool) string {
	if closed {
		return " — the store is closed; these are its last figures"
	}
	return ""
}

// percent renders a fraction as a percentage with one decimal.
func percent(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

// shortDur renders d to three significant digits (1.23ms, not 1.234567ms):
// enough to read a latency, short enough for a table.
func shortDur(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	q := time.Duration(1)
	for d/q >= 1000 {
		q *= 10
	}
	return d.Round(q).String()
}

// warmLine says what warming the caches did.
// sweepLine is the sweeper's line of the pool report.
func sweepLine(s *kv.SweepStats) string {
	if !s.Enabled {
		return "sweeping\toff (keys cannot expire in this store)"
	}
	last := "none yet"
	if !s.LastPass.IsZero() {
		last = "last ended " + s.LastPass.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("sweeping\t%d passes (%s); %d keys found expired, %d deleted, %d rewritten first", s.Passes, last, s.Expired, s.Swept, s.Beaten)
}

func warmLine(w *kv.WarmStats) string {
	if !w.Enabled {
		return "warming\toff"
	}
	state := "idle, last: " + w.Last
	if w.Running {
		state = "running"
	}
	line := fmt.Sprintf("warming\t%s; %d of %d spans warmed (%d pending, %s of tables), %d keys, %s read into the block cache in %s",
		state, w.SpansWarmed, w.SpansQueued, w.PendingSpans, size(w.PendingBytes), w.Keys, size(w.BlockBytes), shortDur(w.Busy))
	if w.HotSetTables > 0 || w.HotSetRows > 0 {
		done := "not yet done"
		if w.HotSetWarmedIn > 0 {
			done = "done in " + shortDur(w.HotSetWarmedIn)
		}
		line += fmt.Sprintf("; hot set: %d of %d tables queued, %d of %d row-cache keys read back, %s",
			w.HotSetQueued, w.HotSetTables, w.RowsRead, w.HotSetRows, done)
	}
	return line
}

package admin

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

// collector turns one DB.Stats snapshot per scrape into metrics, so the
// store keeps no Prometheus state of its own and a scrape costs one Stats
// call. Names follow Prometheus's conventions: coopkv_ prefix, base units
// (seconds, bytes), _total for counters; the queue-wait and step-duration
// histograms are modelled on TiKV's yatp_task_wait_duration and
// yatp_task_exec_duration.
type collector struct {
	db *kv.DB

	workers, busy, parked, extra          *prometheus.Desc
	maxWorkers, blocked, slack            *prometheus.Desc
	tasks                                 *prometheus.Desc // by state: queued, held, running, pending
	tasksTotal                            *prometheus.Desc // by outcome
	steps, yields, wakes, long, preempted *prometheus.Desc
	handoffs, here                        *prometheus.Desc
	levelQueued, levelSteps, levelSeconds *prometheus.Desc
	level0Share, level0Chance             *prometheus.Desc
	queueWait, stepDuration               *prometheus.Desc

	groupRU, groupRULastSecond, groupThrottled, groupRUPerSec *prometheus.Desc
	groupTasks, groupRejected                                 *prometheus.Desc

	cacheHits, cacheMisses, cacheEvictions, cacheHeldBack                           *prometheus.Desc
	warmKeys, warmBytes, warmSeconds, warmPending, warmStoodDown, warmHotSetSeconds *prometheus.Desc
	warmRows                                                                        *prometheus.Desc
	sweepPasses, sweepExpired, sweepSwept, sweepBeaten                              *prometheus.Desc
	diskBytes, memtableBytes                                                        *prometheus.Desc
	blockCacheBytes, blockHits, blockMiss                                           *prometheus.Desc
	levelTables, levelBytes                                                         *prometheus.Desc
	resourceControl, closed                                                         *prometheus.Desc
	failed, diskFull                                                                *prometheus.Desc
	tableReads, tableReadSeconds                                                    *prometheus.Desc
	slowTableReads, diskSlow                                                        *prometheus.Desc
	busyTotal, waitEstimates                                                        *prometheus.Desc
	runawayTotal, runawayWatches                                                    *prometheus.Desc
}

func newCollector(db *kv.DB) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("coopkv_"+name, help, labels, nil)
	}
	return &collector{
		db:      db,
		workers: d("pool_workers", "Read-pool workers."),
		busy:    d("pool_busy_workers", "Worker slots running a step now: the workers in use."),
		parked:  d("pool_parked_workers", "Workers asleep with a free slot."),
		extra:   d("pool_extra_workers", "Temporary workers awake beside the workers, standing in for steps stuck on the CPU or blocked off it."),
		tasks:   d("pool_tasks", "Read tasks by state now: queued (ready), held (until a later time), running (stepping), pending (waiting for a wake).", "state"),
		tasksTotal: d("pool_tasks_total", "Read tasks by how they ended or began: spawned, inline (first step on the caller), completed, cancelled, "+
			"dropped (ended while waiting for a worker), panicked, rejected_busy (refused: pool full), bypassed (row-cache hits served on the caller without a task).", "outcome"),
		steps:        d("pool_steps_total", "Steps run."),
		yields:       d("pool_yields_total", "Steps that ended with the task yielding, to run again."),
		wakes:        d("pool_wakes_total", "Pending tasks woken."),
		long:         d("pool_long_steps_total", "Steps that ran far past their slice (a worker was handed off)."),
		preempted:    d("pool_preempted_steps_total", "Steps cut short at a unit boundary for more urgent work."),
		handoffs:     d("pool_caller_handoffs_total", "Times a worker gave its P to the caller its step's completion readied."),
		here:         d("pool_steps_here_total", "Steps of waiting tasks run on the goroutine awaiting them (a scan's consumer) instead of a worker."),
		levelQueued:  d("pool_level_queued_tasks", "Ready tasks per queue level.", "level"),
		levelSteps:   d("pool_level_steps_total", "Steps run per queue level.", "level"),
		levelSeconds: d("pool_level_step_seconds_total", "Step time per queue level.", "level"),
		level0Share:  d("pool_level0_time_share", "Fraction of step time spent on level 0 so far."),
		level0Chance: d("pool_level0_target_share", "Share of worker time level 0 is entitled to now, given which levels have work."),
		queueWait:    d("pool_queue_wait_seconds", "Time a task waited in the queue before each step."),
		stepDuration: d("pool_step_duration_seconds", "Duration of each step."),

		// The pool bounds the CPU, not the reads in flight (issue 29): these
		// say how far past its workers it runs while reads wait on the disk.
		maxWorkers: d("pool_max_workers", "Bound on the goroutines stepping tasks at once: workers, spares and extras (Options.MaxWorkers)."),
		blocked:    d("pool_blocked_steps", "Goroutines blocked off the CPU now: steps waiting on a slow disk, and Pebble's background reads."),
		slack:      d("pool_slack_steps", "Steps beyond the blocked ones that the CPU controller lets run now, while reads block and the CPU has room."),

		// Load shedding (issue 32): refusals by reason, and how the
		// estimated waits served the reads that had a limit.
		busyTotal: d("busy_total", "Reads refused with ErrBusy, by reason: full (MaxTasks queued and running) or wait (the estimated wait exceeded the read's WithMaxQueueWait).", "reason"),
		waitEstimates: d("pool_wait_estimates_total", "Reads admitted with a WithMaxQueueWait that took their first step: started (all), within_limit (waited no longer than their limit), "+
			"within_estimate (no longer than the estimate).", "outcome"),

		runawayTotal:   d("runaway_total", "Reads a runaway rule caught, by group and action (dryrun, cooldown, kill); a read whose rule changed under it counts under each action it came under.", "group", "action"),
		runawayWatches: d("runaway_watches", "Live runaway watches, by group and action: identities whose next reads are runaway from their first step.", "group", "action"),

		groupRU:           d("group_ru_total", "Request units a resource group has consumed.", "group"),
		groupRULastSecond: d("group_ru_last_second", "Request units a resource group consumed over the last second.", "group"),
		groupThrottled:    d("group_throttled_seconds_total", "Time a resource group's tasks were held by its limit.", "group"),
		groupRUPerSec:     d("group_ru_per_second_setting", "A resource group's configured RU/s (0 = unlimited).", "group", "priority", "burstable"),
		groupTasks:        d("group_tasks", "A resource group's tasks by state now: queued, running, held.", "group", "state"),
		groupRejected:     d("group_rejected_busy_total", "A resource group's reads refused with ErrBusy.", "group"),

		cacheHits:      d("row_cache_hits_total", "Row-cache hits."),
		cacheMisses:    d("row_cache_misses_total", "Row-cache misses (stale entries count as misses)."),
		cacheEvictions: d("row_cache_evictions_total", "Row-cache evictions."),
		cacheHeldBack:  d("row_cache_held_back_total", "Values read on a row-cache miss and not cached, their key not having missed before."),

		// Warming (issue 41): the block cache filled in the background.
		warmKeys:          d("warm_keys_total", "Keys warming read."),
		warmBytes:         d("warm_block_bytes_total", "Bytes of blocks warming read from the filesystem into the block cache."),
		warmSeconds:       d("warm_step_seconds_total", "Time warming's steps took in the read pool."),
		warmPending:       d("warm_pending_bytes", "Bytes of the tables whose key spans are left to warm."),
		warmStoodDown:     d("warm_stood_down_total", "Times warming stood down, by reason: cache full, disk slow, compacting, writing.", "reason"),
		warmHotSetSeconds: d("warm_hot_set_seconds", "How long after Open warming the saved hot set took; 0 until done or without one."),
		warmRows:          d("warm_rows_total", "Keys of the saved row cache read back into it after Open."),
		sweepPasses:       d("sweep_passes_total", "Sweeps of the key space for expired keys."),
		sweepExpired:      d("sweep_expired_total", "Keys the sweeps found expired."),
		sweepSwept:        d("sweep_swept_total", "Expired keys the sweeps deleted."),
		sweepBeaten:       d("sweep_beaten_total", "Expired keys a write reached before the sweep's deletion."),
		diskBytes:         d("storage_disk_bytes", "Disk space the store uses."),
		memtableBytes:     d("storage_memtable_bytes", "Bytes in memtables."),
		blockCacheBytes:   d("storage_block_cache_bytes", "Bytes in Pebble's block cache."),
		blockHits:         d("storage_block_cache_hits_total", "Block-cache hits."),
		blockMiss:         d("storage_block_cache_misses_total", "Block-cache misses."),
		levelTables:       d("storage_level_tables", "Tables per LSM level.", "level"),
		levelBytes:        d("storage_level_bytes", "Bytes per LSM level.", "level"),
		resourceControl:   d("resource_control_enabled", "1 if reads are scheduled by resource group."),
		closed:            d("closed", "1 once the store is closed."),
		failed:            d("failed", "1 once a write error the store cannot recover from (kv.ErrFailed) refuses its writes."),
		diskFull:          d("disk_full", "1 while writes are refused for want of disk space (kv.ErrDiskFull)."),

		tableReads:       d("storage_table_reads_total", "Reads of tables from the filesystem: block-cache misses and compactions' reads."),
		tableReadSeconds: d("storage_table_read_seconds_total", "Time spent in table reads; over coopkv_storage_table_reads_total, the mean read latency."),
		slowTableReads:   d("storage_slow_table_reads_total", "Table reads that told the pool they waited on a slow disk, so that it ran another read meanwhile."),
		diskSlow:         d("storage_disk_slow", "1 while the recent table reads' moving average latency is 30 µs or more: reads then give their CPU slot away."),
	}
}

// Describe sends every metric's description, so the registry can check
// names once, at registration.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.workers, c.busy, c.parked, c.extra, c.maxWorkers, c.blocked, c.slack, c.tasks, c.tasksTotal,
		c.steps, c.yields, c.wakes, c.long, c.preempted, c.handoffs, c.here,
		c.levelQueued, c.levelSteps, c.levelSeconds, c.level0Share, c.level0Chance,
		c.queueWait, c.stepDuration,
		c.groupRU, c.groupRULastSecond, c.groupThrottled, c.groupRUPerSec, c.groupTasks, c.groupRejected,
		c.cacheHits, c.cacheMisses, c.cacheEvictions, c.cacheHeldBack,
		c.warmKeys, c.warmBytes, c.warmSeconds, c.warmPending, c.warmStoodDown, c.warmHotSetSeconds, c.warmRows,
		c.sweepPasses, c.sweepExpired, c.sweepSwept, c.sweepBeaten,
		c.diskBytes, c.memtableBytes, c.blockCacheBytes, c.blockHits, c.blockMiss,
		c.levelTables, c.levelBytes, c.tableReads, c.tableReadSeconds, c.slowTableReads, c.diskSlow,
		c.resourceControl, c.closed, c.failed, c.diskFull, c.busyTotal, c.waitEstimates, c.runawayTotal, c.runawayWatches,
	} {
		ch <- d
	}
}

// Collect reads one snapshot of the store.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.db.Stats()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(c.resourceControl, b2f(c.db.Options().ResourceControl))
	gauge(c.closed, b2f(s.Closed))
	gauge(c.failed, b2f(s.Failed != ""))
	gauge(c.diskFull, b2f(s.DiskFull))

	if p := s.Pool; p != nil {
		gauge(c.workers, float64(p.Workers))
		gauge(c.busy, float64(p.Busy))
		gauge(c.parked, float64(p.Parked))
		gauge(c.extra, float64(p.Extra))
		gauge(c.maxWorkers, float64(p.MaxWorkers))
		gauge(c.blocked, float64(p.Blocked))
		gauge(c.slack, float64(p.Slack))
		for _, st := range []struct {
			name string
			n    int
		}{{"queued", p.Queued}, {"held", p.Held}, {"running", p.Running}, {"pending", p.Pending}} {
			gauge(c.tasks, float64(st.n), st.name)
		}
		for _, o := range []struct {
			name string
			n    int64
		}{
			{"spawned", p.Spawned}, {"inline", p.Inline}, {"completed", p.Completed}, {"cancelled", p.Cancelled},
			{"dropped", p.Dropped}, {"panicked", p.Panicked}, {"rejected_busy", p.RejectedBusy}, {"bypassed", p.Bypassed},
		} {
			counter(c.tasksTotal, float64(o.n), o.name)
		}
		counter(c.busyTotal, float64(p.RejectedBusy), "full")
		counter(c.busyTotal, float64(p.Waits.Refused), "wait")
		counter(c.waitEstimates, float64(p.Waits.Started), "started")
		counter(c.waitEstimates, float64(p.Waits.WithinLimit), "within_limit")
		counter(c.waitEstimates, float64(p.Waits.WithinEstimate), "within_estimate")
		counter(c.steps, float64(p.Steps))
		counter(c.yields, float64(p.Yields))
		counter(c.wakes, float64(p.Wakes))
		counter(c.long, float64(p.LongSteps))
		counter(c.preempted, float64(p.Preempted))
		counter(c.handoffs, float64(p.CallerHandoffs))
		counter(c.here, float64(p.SteppedHere))
		for i, l := range p.Queue.Levels {
			lv := strconv.Itoa(i)
			gauge(c.levelQueued, float64(l.Queued), lv)
			counter(c.levelSteps, float64(l.Steps), lv)
			counter(c.levelSeconds, l.Time.Seconds(), lv)
		}
		if p.Queue.Kind == "mlfq" {
			gauge(c.level0Share, p.Queue.Level0Share)
			gauge(c.level0Chance, p.Queue.Chance)
		}
		ch <- histogram(c.queueWait, p.QueueWait)
		ch <- histogram(c.stepDuration, p.StepTime)
	}

	for _, g := range s.Groups {
		counter(c.groupRU, g.RU, g.Name)
		gauge(c.groupRULastSecond, g.RULastSecond, g.Name)
		counter(c.groupThrottled, g.Throttled.Seconds(), g.Name)
		gauge(c.groupRUPerSec, g.RUPerSec, g.Name, g.Priority, strconv.FormatBool(g.Burstable))
		gauge(c.groupTasks, float64(g.Queued), g.Name, "queued")
		gauge(c.groupTasks, float64(g.Running), g.Name, "running")
		gauge(c.groupTasks, float64(g.Held), g.Name, "held")
		counter(c.groupRejected, float64(g.RejectedBusy), g.Name)
	}

	if r := s.Runaway; r != nil {
		c.collectRunaway(r, counter, gauge)
	}

	if s.RowCache.Enabled {
		counter(c.cacheHits, float64(s.RowCache.Hits))
		counter(c.cacheMisses, float64(s.RowCache.Misses))
		counter(c.cacheEvictions, float64(s.RowCache.Evictions))
		counter(c.cacheHeldBack, float64(s.RowCache.HeldBack))
	}
	if w := s.Warm; w.Enabled {
		counter(c.warmKeys, float64(w.Keys))
		counter(c.warmBytes, float64(w.BlockBytes))
		counter(c.warmSeconds, w.Busy.Seconds())
		gauge(c.warmPending, float64(w.PendingBytes))
		for _, reason := range []string{"cache full", "disk slow", "compacting", "writing"} {
			counter(c.warmStoodDown, float64(w.StoodDown[reason]), reason)
		}
		gauge(c.warmHotSetSeconds, w.HotSetWarmedIn.Seconds())
		counter(c.warmRows, float64(w.RowsCached))
	}
	if w := s.Sweep; w.Enabled {
		counter(c.sweepPasses, float64(w.Passes))
		counter(c.sweepExpired, float64(w.Expired))
		counter(c.sweepSwept, float64(w.Swept))
		counter(c.sweepBeaten, float64(w.Beaten))
	}
	if !s.Closed {
		st := s.Storage
		gauge(c.diskBytes, float64(st.DiskBytes))
		gauge(c.memtableBytes, float64(st.MemtableBytes))
		gauge(c.blockCacheBytes, float64(st.BlockCacheBytes))
		counter(c.blockHits, float64(st.BlockCacheHits))
		counter(c.blockMiss, float64(st.BlockCacheMisses))
		for _, l := range st.Levels {
			lv := strconv.Itoa(l.Level)
			gauge(c.levelTables, float64(l.Tables), lv)
			gauge(c.levelBytes, float64(l.Bytes), lv)
		}
		counter(c.tableReads, float64(st.TableReads))
		counter(c.tableReadSeconds, st.TableReadTime.Seconds())
		counter(c.slowTableReads, float64(st.SlowTableReads))
		gauge(c.diskSlow, b2f(st.DiskSlow))
	}
}

// histogram makes a Prometheus histogram of a pool summary: its buckets
// are already cumulative, in nanoseconds.
func histogram(d *prometheus.Desc, s readpool.DurationSummary) prometheus.Metric {
	buckets := make(map[float64]uint64, len(s.Buckets))
	count := s.Count
	for _, b := range s.Buckets {
		buckets[b.Le.Seconds()] = b.Count
		// The counters are read one by one; never let +Inf be below a bucket.
		count = max(count, b.Count)
	}
	return prometheus.MustNewConstHistogram(d, count, time.Duration(s.Sum).Seconds(), buckets)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// collectRunaway sends the runaway counts and live watches by group and
// action. The default group's series are always sent, zeros included, so
// that the families exist before the first runaway read (a rate over a
// series that appears with its first count loses that count).
func (c *collector) collectRunaway(r *resource.RunawayStats, counter, gauge func(*prometheus.Desc, float64, ...string)) {
	actions := []resource.RunawayAction{resource.RunawayDryRun, resource.RunawayCooldown, resource.RunawayKill}
	seen := false
	for i := range r.Groups {
		g := &r.Groups[i]
		seen = seen || g.Group == resource.DefaultGroup
		for _, a := range actions {
			counter(c.runawayTotal, float64(g.Count(a)), g.Group, string(a))
		}
	}
	if !seen {
		for _, a := range actions {
			counter(c.runawayTotal, 0, resource.DefaultGroup, string(a))
		}
	}
	type key struct{ group, action string }
	watches := map[key]int{}
	for _, a := range actions {
		watches[key{resource.DefaultGroup, string(a)}] = 0
	}
	for _, w := range r.Watches {
		watches[key{w.Group, string(w.Action)}]++
	}
	for k, n := range watches {
		gauge(c.runawayWatches, float64(n), k.group, k.action)
	}
}

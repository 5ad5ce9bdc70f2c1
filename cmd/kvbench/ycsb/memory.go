package main

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sampleEvery is how often a phase's resident set is sampled. The kernel's
// high-water mark, where it can be reset, catches what falls between two
// samples; the samples are the figure elsewhere.
const sampleEvery = 50 * time.Millisecond

// Where a peak came from (memStats.PeakSource, storeMemory.PeakSource).
const (
	// sourceHWM is Linux's VmHWM, reset at the phase's start by writing 5
	// to /proc/self/clear_refs: exact.
	sourceHWM = "vmhwm"
	// sourceStatm is the largest of the samples of /proc/self/statm: may
	// miss a spike shorter than sampleEvery.
	sourceStatm = "statm"
	// sourceGoRuntime is the largest sample of the memory the Go runtime
	// holds (runtime/metrics), where /proc is missing: it leaves out cgo's
	// allocations (Pebble's block cache) and mmapped files.
	sourceGoRuntime = "go-runtime"
	// sourceRusage is getrusage's ru_maxrss of the store's own child
	// process (--isolate): exact, from its start to its exit.
	sourceRusage = "getrusage"
	// sourcePhases is the largest peak of the store's phases, when the
	// stores share one process.
	sourcePhases = "phases"
)

// memStats is the process's memory during one phase. Sizes are bytes.
type memStats struct {
	// PeakRSS is the phase's peak resident set: VmHWM since the phase's
	// start where Linux lets it be reset, else the largest sample
	// (PeakSource says which). Resident pages of mmapped files count
	// (bolt's file, badger's value log); the page cache that pread reads
	// through (Pebble's tables) does not.
	PeakRSS    int64  `json:"peak_rss_bytes"`
	PeakSource string `json:"peak_rss_source"` // vmhwm, statm or go-runtime
	// SampledPeakRSS is the largest sample, taken every 50 ms and at the
	// phase's start and end; SampledPeakAnon is the largest resident set
	// less its file-backed pages (statm's resident − shared), 0 without
	// /proc.
	SampledPeakRSS  int64 `json:"sampled_peak_rss_bytes"`
	SampledPeakAnon int64 `json:"sampled_peak_anon_bytes"`
	Samples         int   `json:"samples"`
	// StartRSS and EndRSS are the resident set at the phase's start and
	// end: StartRSS shows what the load and earlier phases (and, without
	// --isolate, earlier stores) left behind.
	StartRSS int64 `json:"start_rss_bytes"`
	EndRSS   int64 `json:"end_rss_bytes"`
	// GoHeap is the Go heap's objects at the phase's end, live or not yet
	// swept (/memory/classes/heap/objects:bytes); GoHeapLive the heap the
	// last GC found live (/gc/heap/live:bytes); GoRuntime all that the Go
	// runtime has mapped and not given back (heap, stacks, its metadata).
	// What RSS holds beyond GoRuntime is memory allocated outside Go —
	// Pebble's block cache and memtables, in C — and mmapped files. An
	// object's pages count here from its allocation but in RSS only once
	// written: badger's preallocated memtable arenas make its GoHeap
	// larger than its RSS.
	GoHeap     int64 `json:"go_heap_bytes"`
	GoHeapLive int64 `json:"go_heap_live_bytes"`
	GoRuntime  int64 `json:"go_runtime_bytes"`
}

// storeMemory is a store's memory over its whole run. Sizes are bytes.
type storeMemory struct {
	// StartRSS is the resident set just before the store opened: without
	// --isolate, after a GC and debug.FreeOSMemory, it is what the
	// earlier stores left behind.
	StartRSS int64 `json:"start_rss_bytes"`
	// PeakRSS is the store's peak resident set: its child process's
	// ru_maxrss with --isolate (getrusage, exact, open and close
	// included), else the largest of its phases' peaks.
	PeakRSS    int64  `json:"peak_rss_bytes"`
	PeakSource string `json:"peak_rss_source"` // getrusage or phases
}

// rssSample is one reading of the process's resident set.
type rssSample struct {
	rss  int64
	anon int64 // rss less file-backed and shared pages; 0 = unknown
}

// procStatm is read for the resident set on Linux.
const procStatm = "/proc/self/statm"

// statmWorks says whether procStatm can be read, once for the process, so
// that one run's samples all come from one source.
var statmWorks = sync.OnceValue(func() bool {
	_, ok := readStatm()
	return ok
})

// readStatm reads the resident set from procStatm: its second and third
// fields are resident and shared (file-backed) pages.
func readStatm() (rssSample, bool) {
	b, err := os.ReadFile(procStatm)
	if err != nil {
		return rssSample{}, false
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return rssSample{}, false
	}
	res, err1 := strconv.ParseInt(f[1], 10, 64)
	shared, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return rssSample{}, false
	}
	page := int64(os.Getpagesize())
	return rssSample{rss: res * page, anon: (res - shared) * page}, true
}

// readRSS samples the resident set: from /proc where there is one, else
// the memory the Go runtime holds (sourceGoRuntime).
func readRSS() (rssSample, string) {
	if statmWorks() {
		if s, ok := readStatm(); ok {
			return s, sourceStatm
		}
	}
	g := goMemory()
	return rssSample{rss: g.total}, sourceGoRuntime
}

// resetHWM resets Linux's high-water mark of the resident set (VmHWM) to
// the present resident set, and says whether it could: writing 5 to
// clear_refs does only that (Documentation/filesystems/proc.rst).
func resetHWM() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// readHWM reads VmHWM, the resident set's high-water mark, in bytes.
func readHWM() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest)) // "1234 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}

// goMem is the Go runtime's memory, in bytes (see memStats).
type goMem struct {
	heap, live, total int64
}

// goMemory reads the Go runtime's memory from runtime/metrics; total is
// all it has mapped less what it has released.
func goMemory() goMem {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	return goMem{heap: v(0), live: v(1), total: v(2) - v(3)}
}

// freeMemory gives back to the OS what the Go runtime can, so that the
// next store starts from as low a resident set as one process allows.
// Memory freed by C (Pebble's block cache, after Close) stays with the C
// allocator, which may keep some of it: hence --isolate.
func freeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// memSampler samples the resident set from its start until end. It is
// meant for one phase at a time: the high-water mark it resets is the
// process's.
type memSampler struct {
	hwm   bool // VmHWM was reset at the start
	start rssSample
	src   string
	stop  chan struct{}
	done  chan memSamples
}

// memSamples are the sampler's findings.
type memSamples struct {
	peak, peakAnon int64
	last           rssSample
	n              int
}

func (m *memSamples) add(s rssSample) {
	m.peak = max(m.peak, s.rss)
	m.peakAnon = max(m.peakAnon, s.anon)
	m.last = s
	m.n++
}

// startMemSampler resets the high-water mark if it can, takes the first
// sample and samples every interval until end is called.
func startMemSampler(every time.Duration) *memSampler {
	m := &memSampler{stop: make(chan struct{}), done: make(chan memSamples, 1)}
	m.hwm = resetHWM()
	m.start, m.src = readRSS()
	go m.loop(every)
	return m
}

func (m *memSampler) loop(every time.Duration) {
	var ss memSamples
	ss.add(m.start)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s, _ := readRSS()
			ss.add(s)
		case <-m.stop:
			s, _ := readRSS()
			ss.add(s)
			m.done <- ss
			return
		}
	}
}

// end stops the sampler, takes the last sample, and returns the phase's
// figures. The sampler's goroutine has exited when end returns.
func (m *memSampler) end() memStats {
	close(m.stop)
	ss := <-m.done
	ms := memStats{
		PeakRSS:         ss.peak,
		PeakSource:      m.src,
		SampledPeakRSS:  ss.peak,
		SampledPeakAnon: ss.peakAnon,
		Samples:         ss.n,
		StartRSS:        m.start.rss,
		EndRSS:          ss.last.rss,
	}
	if m.hwm {
		// The kernel's RSS counters are per-CPU sums read approximately, so
		// a sample may pass VmHWM by a few pages: the larger wins.
		if hwm, ok := readHWM(); ok {
			ms.PeakRSS, ms.PeakSource = max(hwm, ss.peak), sourceHWM
		}
	}
	g := goMemory()
	ms.GoHeap, ms.GoHeapLive, ms.GoRuntime = g.heap, g.live, g.total
	return ms
}

package main

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/coopkv/coopkv/kv"
)

// touch allocates n bytes and writes every page, so that they are
// resident.
func touch(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	return b
}

// A phase's peak counts what the phase allocated, and its end sees it
// still held.
func TestMemSampler_SeesAnAllocation(t *testing.T) {
	freeMemory()
	s := startMemSampler(time.Millisecond)
	buf := touch(64 << 20)
	ms := s.end()
	runtime.KeepAlive(buf)

	assert.GreaterOrEqual(t, ms.PeakRSS, ms.StartRSS+60<<20, "peak %d, start %d", ms.PeakRSS, ms.StartRSS)
	assert.GreaterOrEqual(t, ms.SampledPeakRSS, ms.StartRSS+60<<20)
	assert.GreaterOrEqual(t, ms.EndRSS, ms.StartRSS+60<<20)
	assert.GreaterOrEqual(t, ms.Samples, 2)
	assert.GreaterOrEqual(t, ms.GoHeap, int64(64<<20))
	assert.GreaterOrEqual(t, ms.GoRuntime, ms.GoHeap)
	if runtime.GOOS == "linux" {
		assert.Equal(t, sourceHWM, ms.PeakSource, "Linux lets a process reset its own VmHWM")
	}
}

// The high-water mark catches a spike that falls between two samples, and
// starts again at each phase: a phase that allocates nothing does not
// inherit the peak of the one before, as a whole-process peak (ru_maxrss)
// would have it.
func TestMemSampler_HighWaterMark(t *testing.T) {
	if !resetHWM() {
		t.Skip("VmHWM cannot be reset here")
	}
	freeMemory()
	s := startMemSampler(time.Hour) // no samples but the start's and the end's
	func() { runtime.KeepAlive(touch(128 << 20)) }()
	freeMemory()
	spike := s.end()
	assert.Equal(t, sourceHWM, spike.PeakSource)
	assert.Greater(t, spike.PeakRSS-spike.StartRSS, int64(100<<20), "VmHWM saw the spike: peak %d, start %d", spike.PeakRSS, spike.StartRSS)
	if !raceEnabled { // the race detector's shadow of the freed pages stays resident
		assert.Less(t, spike.SampledPeakRSS-spike.StartRSS, int64(50<<20), "the samples, before and after it, did not")
	}

	s = startMemSampler(time.Hour)
	after := s.end()
	assert.Equal(t, sourceHWM, after.PeakSource)
	assert.Greater(t, spike.PeakRSS-after.PeakRSS, int64(100<<20), "spike %d, after %d", spike.PeakRSS, after.PeakRSS)
}

func TestReadRSS(t *testing.T) {
	s, src := readRSS()
	assert.Positive(t, s.rss)
	if runtime.GOOS == "linux" {
		assert.Equal(t, sourceStatm, src)
		assert.Positive(t, s.anon)
		assert.LessOrEqual(t, s.anon, s.rss)
		hwm, ok := readHWM()
		require.True(t, ok)
		assert.Positive(t, hwm)
	}
}

func TestWriteDelta(t *testing.T) {
	at := func(wal, flushed, compacted uint64, amp float64) kv.Stats {
		return kv.Stats{Storage: kv.StorageStats{WALBytesWritten: wal, FlushedBytes: flushed, CompactedBytes: compacted, WriteAmp: amp}}
	}
	w := writeDelta(at(100, 50, 10, 1.6), at(1100, 950, 510, 2.4))
	assert.Equal(t, &writeStats{WALBytes: 1000, FlushedBytes: 900, CompactedBytes: 500, WriteAmp: 2.4, WriteAmpSinceOpen: 2.4}, w)

	w = writeDelta(at(1100, 950, 510, 2.4), at(1100, 950, 900, 2.75))
	assert.Zero(t, w.WriteAmp, "no WAL bytes, no write amplification: a read-only phase")
	assert.Equal(t, int64(390), w.CompactedBytes, "its compactions still count")
	assert.Equal(t, 2.75, w.WriteAmpSinceOpen)

	assert.Equal(t, &writeStats{WALBytes: 1000, FlushedBytes: 900, CompactedBytes: 600, WriteAmp: 2.5}, writesSinceOpen(at(1000, 900, 600, 2.4)),
		"the ratio of the totals, not Pebble's figure")
}

func TestChildArgs(t *testing.T) {
	cfg := &config{workloads: []string{"a", "e"}, records: 10, operations: 20, threads: 3, fieldCount: 4, fieldLen: 5,
		dir: "/d", cpuProfile: "/cpu", profilePhase: "c", props: []string{"coopkv.rowcache=-1", "x=y"}, reopen: true, timeline: true}
	assert.Equal(t, []string{"--child", "--stores=bbolt", "--workloads=a,e", "--records=10", "--operations=20", "--threads=3",
		"--field-count=4", "--field-length=5", "--json=/r.json", "--reopen=true", "--timeline=true", "--dir=/d", "--cpuprofile=/cpu.bbolt",
		"--cpuprofile-phase=c", "--prop=coopkv.rowcache=-1", "--prop=x=y"}, childArgs(cfg, "bbolt", "/r.json"))

	// The child gets --timeline as the parent resolved it: off with
	// --reopen when the user said so.
	cfg.timeline = false
	assert.Contains(t, childArgs(cfg, "bbolt", "/r.json"), "--timeline=false")
}

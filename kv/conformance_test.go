package kv_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/coopkv/coopkv/kv"
	"github.com/coopkv/coopkv/kv/kvtest"
)

// TestStore_Conformance runs the Store conformance suite against *DB on
// every scheduler, with the row cache on and off, in memory and on disk.
func TestStore_Conformance(t *testing.T) {
	for _, c := range []struct {
		name string
		opts kv.Options
	}{
		{"mlfq", kv.Options{InMemory: true, Scheduler: kv.SchedulerMLFQ}},
		{"fifo", kv.Options{InMemory: true, Scheduler: kv.SchedulerFIFO}},
		{"steal", kv.Options{InMemory: true, Scheduler: kv.SchedulerWorkStealing}},
		{"direct", kv.Options{InMemory: true, Scheduler: kv.SchedulerDirect}},
		{"resource-control", kv.Options{InMemory: true, ResourceControl: true}},
		{"no-row-cache", kv.Options{InMemory: true, RowCacheSize: -1}},
		{"disk", kv.Options{NoSync: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			kvtest.Run(t, func(t *testing.T) kv.Store {
				dir := ""
				if !c.opts.InMemory {
					dir = t.TempDir()
				}
				o := c.opts
				db, err := kv.Open(dir, &o)
				if err != nil {
					t.Fatal(err)
				}
				return db
			})
			kvtest.RunExpiry(t, func(t *testing.T) (kv.Store, kvtest.Advance) {
				dir := ""
				if !c.opts.InMemory {
					dir = t.TempDir()
				}
				var now atomic.Int64 // the sweeper reads the clock too
				now.Store(time.Now().UnixNano())
				o := c.opts
				o.Clock = func() time.Time { return time.Unix(0, now.Load()) }
				db, err := kv.Open(dir, &o)
				if err != nil {
					t.Fatal(err)
				}
				return db, func(d time.Duration) { now.Add(int64(d)) }
			})
		})
	}
}

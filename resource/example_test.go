package resource_test

import (
	"context"
	"fmt"
	"time"

	"github.com/coopkv/coopkv/readpool"
	"github.com/coopkv/coopkv/resource"
)

func ExampleManager() {
	m := resource.NewManager()
	if err := m.Put(resource.GroupConfig{Name: "oltp", RUPerSec: 3000, Burstable: true, Priority: resource.PriorityHigh}); err != nil {
		panic(err)
	}
	if err := m.Put(resource.GroupConfig{Name: "batch", RUPerSec: 500}); err != nil {
		panic(err)
	}
	for _, c := range m.List() {
		fmt.Printf("%s %v RU/s burstable=%v %v\n", c.Name, c.RUPerSec, c.Burstable, c.Priority)
	}
	fmt.Println(m.Resolve("nope").Name())
	fmt.Println(m.Delete(resource.DefaultGroup))
	// Output:
	// batch 500 RU/s burstable=false medium
	// default 0 RU/s burstable=true medium
	// oltp 3000 RU/s burstable=true high
	// default
	// resource: the default group cannot be deleted
}

func ExampleManager_Put_invalid() {
	m := resource.NewManager()
	err := m.Put(resource.GroupConfig{Name: "", RUPerSec: -1, Priority: 3})
	fmt.Println(err)
	// Output:
	// resource: invalid group: Name is empty
	// resource: invalid group: RUPerSec -1 is neither 0 (unlimited) nor within [0.001, 1e+09]
	// resource: invalid group: Priority 3 is not low (1), medium (8) or high (16)
}

func ExampleRU() {
	fmt.Println(resource.RU(resource.RUExec, 0, false))
	fmt.Println(resource.RU(0, resource.RUBytes, false))
	fmt.Println(resource.RU(0, 0, true))
	// Output:
	// 1
	// 1
	// 0.125
}

type readTask struct{ done chan error }

func (t *readTask) Step(sc *readpool.StepContext) readpool.Status {
	sc.Charge(1, 64<<10) // one row, 64 KiB read: 1 RU
	return readpool.Ready
}
func (t *readTask) Done(err error) { t.done <- err }

func ExampleNewScheduler() {
	m := resource.NewManager()
	if err := m.Put(resource.GroupConfig{Name: "web", RUPerSec: 1000, Burstable: true}); err != nil {
		panic(err)
	}
	s := resource.NewScheduler(m)
	// The scheduler is both the pool's queue and its accountant.
	p, err := readpool.New(readpool.Options{Workers: 2, Queue: s, Accountant: s})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	g := m.Resolve("web") // once per request
	t := &readTask{done: make(chan error, 1)}
	if _, err := p.Spawn(context.Background(), t, readpool.SpawnOptions{Group: g.Name(), Tag: g}); err != nil {
		panic(err)
	}
	fmt.Println(<-t.done)
	for _, st := range m.Stats() {
		if st.Name == "web" {
			fmt.Println(st.RU >= 1.125) // 64 KiB and the request, plus the step's time
		}
	}
	// Output:
	// <nil>
	// true
}

func ExampleRunawayRule_Validate() {
	r := &resource.RunawayRule{ExecElapsed: 10, Action: "stop"} // 10 ns: a unit mistake
	fmt.Println(r.Validate())
	// Output:
	// resource: invalid runaway rule: ExecElapsed 10ns is neither 0 (no limit) nor within [100µs, 24h0m0s]
	// resource: invalid runaway rule: Action "stop" is not dryrun, cooldown or kill
}

// The read path's side of the runaway rules: a read starts with NewRead
// and is judged after each step by the totals of its steps.
func ExampleRunaways() {
	m := resource.NewManager()
	err := m.Put(resource.GroupConfig{Name: "batch", Runaway: &resource.RunawayRule{
		RowsScanned: 1000, Action: resource.RunawayCooldown, Watch: time.Minute,
	}})
	if err != nil {
		panic(err)
	}
	g := m.Resolve("batch")
	rs := resource.NewRunaways(nil, 0)

	rd := rs.NewRead(g.Name(), resource.WatchKey{TaskID: 7})
	for _, rows := range []int64{400, 800, 1200, 1600} { // after each step
		action, newly := rs.Observe(&rd, g.Runaway(), 0, rows)
		fmt.Printf("%d rows: %q newly=%v\n", rows, action, newly)
	}
	// The task's next read is runaway from its start, for a minute.
	next := rs.NewRead(g.Name(), resource.WatchKey{TaskID: 7})
	fmt.Println(next.Watched(), next.Action())
	fmt.Printf("%+v\n", rs.Stats().Groups)
	// Output:
	// 400 rows: "" newly=false
	// 800 rows: "" newly=false
	// 1200 rows: "cooldown" newly=true
	// 1600 rows: "cooldown" newly=false
	// true cooldown
	// [{Group:batch DryRun:0 Cooldown:2 Kill:0 Watched:1}]
}

package main

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/coopkv/coopkv/cmd/internal/bench"
	"github.com/coopkv/coopkv/kv"
)

// config is what one run is told by the root's flags: the engine's
// (bench.Config) and the store's. A workload's own flags are bound to the
// workload.
type config struct {
	bench.Config
	pd          []string      // PD's addresses, HOST:PORT each; none with mock
	mock        bool          // client-go's in-process mock cluster instead of PD's
	prefix      string        // the store's key prefix (tikv.Options.Prefix)
	openTimeout time.Duration // how long to wait for PD
	workers     int           // the client's coprocessor pool; 0 = GOMAXPROCS
	maxTasks    int           // coprocessor requests queued or running before kv: busy; 0 = workers × 2000
	timeSlice   time.Duration // a coprocessor step's slice; 0 = the store's default
	gc          bool          // the store advances the GC safe point, as by default
	// --faults: the mock cluster's faults (faults.go), and their timing.
	faults                                        bool
	faultEvery, faultDown, faultElect, faultSplit time.Duration
}

// defaultPrefix keeps a run's keys apart from an application's, which
// live under tikv.DefaultPrefix unless it says otherwise.
const defaultPrefix = "kvbench/"

// Labels of the store in the report, where kvbench names its schedulers:
// the only "scheduler" of a remote store is the cluster's.
const (
	labelTiKV = "tikv"
	labelMock = "tikv-mock"
)

// addFlags registers the root's flags on fs, bound to c's fields.
func (c *config) addFlags(fs *pflag.FlagSet) {
	c.Config.AddFlags(fs)
	fs.StringSliceVar(&c.pd, "pd", nil, "the cluster's PD servers, comma-separated `HOST:PORT` addresses (required unless --mock)")
	fs.BoolVar(&c.mock, "mock", false, "run on client-go's in-process mock cluster, split into regions, instead of a cluster: "+
		"no TiKV needed, but the figures measure the client and the mock, not TiKV")
	fs.StringVar(&c.prefix, "prefix", defaultPrefix, "the store's key prefix: every key the run writes and reads is under it")
	fs.DurationVar(&c.openTimeout, "open-timeout", 10*time.Second, "how long to wait for PD before failing")
	fs.BoolVar(&c.gc, "gc", false, "let the store advance the cluster's GC safe point (tikv.Options.GCLifetime's default); "+
		"off, the run leaves GC to whoever owns it (TiDB on a shared cluster)")
	fs.IntVar(&c.workers, "workers", 0, "workers of the client's coprocessor pool (0 = GOMAXPROCS); other reads are scheduled by TiKV")
	fs.IntVar(&c.maxTasks, "max-tasks", 0, "coprocessor requests queued or running in the client's pool before one fails with \"kv: busy\" (0 = 2000 × workers)")
	fs.BoolVar(&c.faults, "faults", false, "with --mock: a cluster of three stores, every region on each, under faults for the whole run — "+
		"every --fault-every one store stops for --fault-down, its leaders move to the others --fault-election after it stopped, "+
		"a region's leader moves every 50 ms, and every --fault-split a region splits or merges with the next; "+
		"the phases still end on time (see each result's overrun_ms)")
	fs.DurationVar(&c.faultEvery, "fault-every", 3*time.Second, "with --faults: the time between one store's restart and the next store's stop")
	fs.DurationVar(&c.faultDown, "fault-down", time.Second, "with --faults: how long a stopped store stays down")
	fs.DurationVar(&c.faultElect, "fault-election", 500*time.Millisecond, "with --faults: how long after a store stopped its leaders move to the other stores (a raft election)")
	fs.DurationVar(&c.faultSplit, "fault-split", 250*time.Millisecond, "with --faults: the time between two region changes, a split at a random key or a merge of its region with the next, "+
		"applied between the mock's requests with TiKV's region epochs (0 = none)")
	fs.DurationVar(&c.timeSlice, "time-slice", 0, "how long a coprocessor step runs before it yields (0 = the store's default, 1ms)")
}

// validate tidies --pd and reports every problem with c and with w's
// flags at once, joined (errors.Join).
func (c *config) validate(w bench.Workload) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if needsGroups(w) {
		bad("%s measures each resource group's RU in the store's own process (a *kv.DB's groups), which a TiKV store has not: "+
			"its groups are PD's and TiKV's, whose consumption TiKV's metrics show; run it with kvbench", w.Name())
	}
	errs = append(errs, c.Config.Validate(), w.Validate())
	c.pd = slices.DeleteFunc(c.pd, func(a string) bool { return strings.TrimSpace(a) == "" })
	for i, a := range c.pd {
		c.pd[i] = strings.TrimSpace(a)
		if _, port, err := net.SplitHostPort(c.pd[i]); err != nil || port == "" {
			bad("--pd %q: want HOST:PORT", c.pd[i])
		}
	}
	switch {
	case c.mock && len(c.pd) > 0:
		bad("--pd and --mock: give one (--mock runs without a cluster)")
	case !c.mock && len(c.pd) == 0:
		bad("no cluster: give --pd HOST:PORT,… (PD's client address, e.g. --pd 127.0.0.1:2379 for tiup playground) or --mock")
	}
	if p := []byte(c.prefix); len(p) == 0 || kv.PrefixEnd(p) == nil {
		bad("--prefix %q: want a prefix of at least one byte that is not 0xff", c.prefix)
	}
	for _, k := range []struct {
		wrong bool
		msg   string
	}{
		{c.openTimeout <= 0, fmt.Sprintf("--open-timeout must be positive, not %v", c.openTimeout)},
		{c.workers < 0, fmt.Sprintf("--workers must not be negative, not %d", c.workers)},
		{c.maxTasks < 0, fmt.Sprintf("--max-tasks must not be negative, not %d (0 = 2000 × workers)", c.maxTasks)},
		{c.timeSlice < 0, fmt.Sprintf("--time-slice must not be negative, not %v", c.timeSlice)},
		{c.faults && !c.mock, "--faults needs --mock: it injects the faults into the in-process mock cluster"},
		{c.faults && (c.faultEvery <= 0 || c.faultDown <= 0 || c.faultElect < 0 || c.faultSplit < 0),
			fmt.Sprintf("--fault-every and --fault-down must be positive and --fault-election and --fault-split not negative, not %v, %v, %v, %v",
				c.faultEvery, c.faultDown, c.faultElect, c.faultSplit)},
	} {
		if k.wrong {
			errs = append(errs, errors.New(k.msg))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.Schedulers = []string{c.label()} // the report's one row set
	return nil
}

// needsGroups reports whether w measures resource groups' RU, which the
// engine reads from the store's in-process resource.Manager.
func needsGroups(w bench.Workload) bool {
	return slices.ContainsFunc(w.Phases(), func(p bench.Phase) bool { return p.RU })
}

// label is the store's label in the report.
func (c *config) label() string {
	if c.mock {
		return labelMock
	}
	return labelTiKV
}

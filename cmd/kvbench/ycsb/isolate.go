package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// childFlag is the hidden flag of a store's child process under
// --isolate. The test binary, the executable re-run when the command runs
// inside a test, looks for it too, to run the command instead of the tests
// (TestMain).
const childFlag = "child"

// childWaitDelay is how long a child interrupted by a cancelled run has to
// close its store and remove its directory before it is killed.
const childWaitDelay = 30 * time.Second

// runIsolated runs store name in a child process, a copy of this
// executable with --child --stores name, which writes its results as JSON
// to a temporary file. The child's peak resident set, from
// getrusage, is then the store's alone: no earlier store's memory is left
// in it. Its progress goes to errOut; its tables are dropped.
func runIsolated(ctx context.Context, cfg *config, name string, errOut io.Writer) (info storeInfo, phases []phaseStats, err error) {
	info = storeInfo{Name: name}
	exe, err := os.Executable()
	if err != nil {
		return info, nil, fmt.Errorf("--isolate: %w", err)
	}
	f, err := os.CreateTemp(cfg.dir, "ycsb-"+name+"-*.json")
	if err != nil {
		return info, nil, fmt.Errorf("--isolate: %w", err)
	}
	path := f.Name()
	defer func() { err = errors.Join(err, os.Remove(path)) }()
	if err := f.Close(); err != nil {
		return info, nil, fmt.Errorf("--isolate: %w", err)
	}

	cmd := exec.CommandContext(ctx, exe, childArgs(cfg, name, path)...)
	// An interrupt, not exec's default kill, so that the child closes its
	// store and removes its directory (main's cli.SignalContext).
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = childWaitDelay
	cmd.Stderr = errOut
	if err := cmd.Run(); err != nil {
		if ctxErr := context.Cause(ctx); ctxErr != nil {
			return info, nil, ctxErr
		}
		return info, nil, fmt.Errorf("child process: %w", err)
	}

	b, err := os.ReadFile(path)
	if err != nil {
		return info, nil, fmt.Errorf("child's results: %w", err)
	}
	var res results
	if err := json.Unmarshal(b, &res); err != nil {
		return info, nil, fmt.Errorf("child's results: %w", err)
	}
	if len(res.Stores) != 1 || res.Stores[0].Name != name {
		return info, nil, fmt.Errorf("child's results are for %v, not %s", res.storeNames(), name)
	}
	info = res.Stores[0]
	// ru_maxrss covers the child's whole life. The kernel sums its RSS
	// counters per CPU and reads them approximately, so a phase's VmHWM
	// may pass it by a few hundred KiB: the larger wins.
	if peak, ok := childPeakRSS(cmd.ProcessState); ok {
		info.Memory.PeakRSS, info.Memory.PeakSource = max(peak, info.Memory.PeakRSS), sourceRusage
	}
	return info, res.Phases, nil
}

// childArgs are the flags of the child that runs store name for cfg and
// writes its results to jsonPath.
func childArgs(cfg *config, name, jsonPath string) []string {
	args := []string{
		"--" + childFlag,
		"--stores=" + name,
		"--workloads=" + strings.Join(cfg.workloads, ","),
		"--records=" + strconv.FormatInt(cfg.records, 10),
		"--operations=" + strconv.FormatInt(cfg.operations, 10),
		"--threads=" + strconv.Itoa(cfg.threads),
		"--field-count=" + strconv.FormatInt(cfg.fieldCount, 10),
		"--field-length=" + strconv.FormatInt(cfg.fieldLen, 10),
		"--json=" + jsonPath,
		"--reopen=" + strconv.FormatBool(cfg.reopen),
		"--" + timelineFlag + "=" + strconv.FormatBool(cfg.timeline),
	}
	if cfg.dir != "" {
		args = append(args, "--dir="+cfg.dir)
	}
	if cfg.cpuProfile != "" {
		args = append(args, "--cpuprofile="+cfg.cpuProfile+"."+name, "--cpuprofile-phase="+cfg.profilePhase)
	}
	for _, p := range cfg.props {
		args = append(args, "--prop="+p)
	}
	return args
}

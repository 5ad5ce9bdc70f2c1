package bench

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Config is what the engine is told for every workload: the dataset, how
// long each phase lasts, the seed, the schedulers to run on, and where
// the results go. A workload's own knobs are its flags (Workload.Flags);
// the store's are the binary's (its Stores).
type Config struct {
	Keys      int64         // keys loaded before the timed phases
	ValueSize int           // bytes per value
	Duration  time.Duration // each measured phase
	Warmup    time.Duration // the unmeasured phase before each measured one; 0 = none
	Seed      uint64        // seeds every random choice
	// Schedulers are the read schedulers to run on, in order, each on a
	// store of its own (Stores.Open); a workload may run on others
	// (Workload.Schedulers). The binary checks the names: the engine
	// passes them to its Stores as they are.
	Schedulers []string
	JSONPath   string // "" = no JSON report; "-" = stdout (the table then goes to stderr)
	PlotPath   string // "" = no plot; .png or .svg
	TracePath  string // "" = no runtime trace
	Quiet      bool   // no progress output

	// onPacedGet, when set (by tests), is called with the latency from
	// when it was due and the service time of every Get that a paced
	// client records (see pacedGets), from the clients' goroutines.
	onPacedGet func(e2e, service time.Duration)
}

// JSONStdout is the --json path that means standard output.
const JSONStdout = "-"

// AddFlags registers c's flags on fs (a root command's persistent flags:
// every workload has them), with the defaults of a plain kvbench run.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.Int64Var(&c.Keys, "keys", 200_000, "keys to load")
	fs.IntVar(&c.ValueSize, "value-size", 100, "value size in bytes")
	fs.DurationVar(&c.Duration, "duration", 5*time.Second, "measured time per scheduler and phase")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "unmeasured warm-up before each measured phase")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed for keys, values and every random choice")
	fs.StringVar(&c.JSONPath, "json", "", "write the results as JSON to `FILE`; - writes them to stdout, and the table to stderr instead")
	fs.StringVar(&c.PlotPath, "plot", "", "plot latency percentiles to `FILE` (.png or .svg)")
	fs.StringVar(&c.TracePath, "trace", "", "write a Go runtime trace of the whole run to `FILE`, for go tool trace "+
		"(e.g. go tool trace -pprof=sched FILE: where goroutines waited for a P); large: keep the run short")
	fs.BoolVarP(&c.Quiet, "quiet", "q", false, "no progress output")
}

// Validate reports every problem with c at once, joined (errors.Join),
// or nil; the binary joins them with its own and the workload's.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Keys < 1 {
		bad("--keys must be at least 1, not %d", c.Keys)
	}
	if c.ValueSize < 1 {
		bad("--value-size must be at least 1, not %d", c.ValueSize)
	}
	if c.Duration <= 0 {
		bad("--duration must be positive, not %v", c.Duration)
	}
	if c.Warmup < 0 {
		bad("--warmup must not be negative, not %v", c.Warmup)
	}
	if c.PlotPath != "" {
		if _, err := plotFormat(c.PlotPath); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// plotFormat returns the image format that path's extension asks for.
func plotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".png", ".svg":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--plot %s: the file must end in .png or .svg", path)
	}
}

//go:build !(linux || darwin)

package main

import (
	"os"
	"time"
)

// processCPU is not read on this system: CPU per operation is 0.
func processCPU() time.Duration { return 0 }

// childPeakRSS would be a child's peak resident set; this system's
// rusage is not read (the store's peak is then its phases' largest).
func childPeakRSS(*os.ProcessState) (int64, bool) { return 0, false }

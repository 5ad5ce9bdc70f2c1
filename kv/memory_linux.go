package kv

import (
	"os"
	"syscall"
)

// processMemory is the memory this process may use (see memoryLimit).
func processMemory() int64 {
	var si syscall.Sysinfo_t
	var physical int64
	if syscall.Sysinfo(&si) == nil {
		physical = int64(si.Totalram) * int64(si.Unit)
	}
	return memoryLimit(os.DirFS("/"), physical)
}

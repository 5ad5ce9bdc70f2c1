//go:build linux || freebsd || netbsd || openbsd || dragonfly || solaris

package slowdisk

import (
	"errors"
	"syscall"
	"time"
)

// blockThread blocks the calling thread for d in nanosleep, a blocking
// system call: Go's runtime sees the goroutine in a syscall and, as for a
// slow pread, hands its P to another thread once the call outlasts sysmon's
// 20 µs. A signal that interrupts the sleep (EINTR) resumes it for the
// time remaining, so the read waits the whole latency.
func blockThread(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); !errors.Is(err, syscall.EINTR) {
			return
		}
		ts = rem
	}
}

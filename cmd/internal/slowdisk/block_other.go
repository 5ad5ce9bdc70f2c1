//go:build !(linux || freebsd || netbsd || openbsd || dragonfly || solaris)

package slowdisk

import (
	"runtime"
	"time"
)

// blockThread blocks the calling thread for d where the system call
// package has no nanosleep (macOS, Windows): the goroutine locks its thread
// and sleeps, so that the thread is held — the runtime cannot run another
// goroutine on it — and the P is handed off, as for a blocking read.
func blockThread(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	time.Sleep(d)
}

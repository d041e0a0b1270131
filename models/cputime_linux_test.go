package models

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// threadCPUNanos returns the CPU time the calling OS thread has used. The
// benchmarks report it beside wall time because the shared test machines
// are oversubscribed: CPU time per operation stays meaningful when wall
// time includes waiting for a core.
func threadCPUNanos() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }

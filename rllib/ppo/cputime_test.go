//go:build unix

package ppo

import "golang.org/x/sys/unix"

// processCPUNanos returns the CPU time the whole process has used (every
// thread's). The learner benchmarks report it per step beside wall time:
// on an oversubscribed machine wall time includes waiting for a core, but
// CPU time per step shows what the shards cost in all, so an unchanged
// CPU time with more threads means the work split without overhead.
func processCPUNanos() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

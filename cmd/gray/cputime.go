package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is the unit of the times in /proc/<pid>/stat (USER_HZ, which
// Linux fixes at 100 for user space whatever the kernel's own HZ).
const clockTick = 10 * time.Millisecond

// sessionCPU returns the CPU time used so far by this process and every
// process it started: itself and the children it already waited for from
// getrusage (microseconds), its live children (the session's workers) from
// their /proc/<pid>/stat, each with the children they waited for. The
// difference of two readings is what a stretch of work cost the driver
// and all its workers together, the figure that Ray's per-task overhead
// hides when it reports only rates.
func sessionCPU() (time.Duration, error) {
	var self, reaped syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &reaped); err != nil {
		return 0, fmt.Errorf("getrusage of children: %w", err)
	}
	total := tv(self.Utime) + tv(self.Stime) + tv(reaped.Utime) + tv(reaped.Stime)
	live, err := childrenCPU(os.Getpid())
	if err != nil {
		return 0, err
	}
	return total + live, nil
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// childrenCPU sums the CPU time of the live processes whose parent is
// pid, read from /proc (Linux only: elsewhere it is an error, and the
// microbenchmark leaves the CPU column out).
func childrenCPU(pid int) (time.Duration, error) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("reading the workers' CPU time needs /proc: %w", err)
	}
	var total time.Duration
	for _, e := range dir {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		ppid, ticks, ok := parseStat(string(b))
		if ok && ppid == pid {
			total += time.Duration(ticks) * clockTick
		}
	}
	return total, nil
}

// parseStat reads a /proc/<pid>/stat line: the parent's pid, and utime +
// stime + cutime + cstime in clock ticks. The command name (field 2) may
// hold spaces and parentheses, so fields are counted from its last ')'.
func parseStat(s string) (ppid int, ticks int64, ok bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); ppid is field 4, utime..cstime 14..17.
	if len(f) < 15 {
		return 0, 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, false
	}
	for _, k := range f[11:15] {
		v, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		ticks += v
	}
	return ppid, ticks, true
}

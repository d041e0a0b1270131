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

// cpuReading is one reading of the CPU time used so far by this process
// (the driver) and every process it started: the children it already
// waited for from getrusage, its live children (the session's workers)
// each from /proc/<pid>/stat with the children they waited for. The
// difference of two readings is what a stretch of work cost the driver
// and all its workers together, the figure that Ray's per-task overhead
// hides when it reports only rates; split by process, it says where that
// cost went.
type cpuReading struct {
	driver  time.Duration
	reaped  time.Duration
	workers map[int]procReading // live children by pid
}

// procReading is a live worker's CPU time and its voluntary context
// switches (every thread's): the times it went to sleep, so about the
// times it had to be woken again.
type procReading struct {
	cpu     time.Duration
	wakeups int64
}

// total is the CPU time of the driver and all its workers.
func (r cpuReading) total() time.Duration {
	t := r.driver + r.reaped
	for _, w := range r.workers {
		t += w.cpu
	}
	return t
}

// readCPU takes a cpuReading (Linux only: elsewhere /proc is missing, it
// is an error, and the microbenchmark leaves the CPU column out).
//
// A worker that exited but is not yet reaped (a zombie: a killed actor's,
// a spare the pool let go) shows in /proc/<pid>/stat only a part of the
// CPU time it used, and is not yet in the reaped time, so the reading
// waits (up to zombieWait) until the driver has reaped it; otherwise a row
// that kills its actors at the end would seem to cost less than nothing.
//
// A worker reaped while the reading lists /proc would be in neither the
// reaped time read before the listing nor the listing, so the reading is
// taken again until the reaped time is the same after the listing as
// before it. When a zombie or such a change is still there after
// zombieWait, the reading is an error (the row then leaves out that
// trial's CPU split) rather than a figure missing a worker's time, which
// showed as negative CPU time for the workers.
func readCPU() (cpuReading, error) { return readCPUWithin(zombieWait) }

// zombieWait bounds readCPU's wait for exited workers to be reaped (the
// pool reaps each as soon as it exits).
const zombieWait = time.Second

// readCPUWithin is readCPU waiting up to wait for the reading to settle.
func readCPUWithin(wait time.Duration) (cpuReading, error) {
	deadline := time.Now().Add(wait)
	for {
		r, unsettled, err := readCPUOnce()
		if err != nil || !unsettled {
			return r, err
		}
		if time.Now().After(deadline) {
			return cpuReading{}, fmt.Errorf("a worker exited while the CPU time was read, and was not reaped within %v", wait)
		}
		time.Sleep(time.Millisecond)
	}
}

// readCPUOnce takes one reading; unsettled when a worker is a zombie or
// one was reaped while /proc was listed.
func readCPUOnce() (r cpuReading, unsettled bool, err error) {
	var self, reaped, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return cpuReading{}, false, fmt.Errorf("getrusage: %w", err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &reaped); err != nil {
		return cpuReading{}, false, fmt.Errorf("getrusage of children: %w", err)
	}
	defer func() {
		if err != nil || unsettled {
			return
		}
		if err = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after); err != nil {
			err = fmt.Errorf("getrusage of children: %w", err)
			return
		}
		unsettled = after.Utime != reaped.Utime || after.Stime != reaped.Stime
	}()
	r = cpuReading{
		driver:  tv(self.Utime) + tv(self.Stime),
		reaped:  tv(reaped.Utime) + tv(reaped.Stime),
		workers: map[int]procReading{},
	}
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return cpuReading{}, false, fmt.Errorf("reading the workers' CPU time needs /proc: %w", err)
	}
	me := os.Getpid()
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited since the listing
		}
		ppid, ticks, ok := parseStat(string(b))
		if !ok || ppid != me {
			continue
		}
		if zombie(string(b)) {
			unsettled = true
			continue
		}
		r.workers[pid] = procReading{cpu: time.Duration(ticks) * clockTick, wakeups: wakeups(e.Name())}
	}
	return r, unsettled, nil
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

// wakeups sums the voluntary context switches of process pid's threads
// (0 for a process that exited meanwhile).
func wakeups(pid string) int64 {
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil {
		return 0
	}
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + pid + "/task/" + t.Name() + "/status")
		if err != nil {
			continue
		}
		n += parseSwitches(string(b))
	}
	return n
}

// zombie reports whether a /proc/<pid>/stat line is an exited process's
// that its parent has not reaped yet (state Z).
func zombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i >= 0 && strings.HasPrefix(stat[i+1:], " Z")
}

// parseSwitches reads voluntary_ctxt_switches from a /proc status file.
func parseSwitches(status string) int64 {
	const key = "\nvoluntary_ctxt_switches:"
	i := strings.Index(status, key)
	if i < 0 {
		return 0
	}
	rest := status[i+len(key):]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	n, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// cpuSplit is where a stretch of work's CPU time went, per unit of work.
type cpuSplit struct {
	Driver  float64 `json:"driver"`  // seconds of the driver's CPU per unit
	Workers float64 `json:"workers"` // seconds of all workers' CPU (reaped ones too) per unit
	Ran     int     `json:"ran"`     // workers that used CPU or were woken meanwhile
	Of      int     `json:"of"`      // workers alive at the end
	Wakeups float64 `json:"wakeups"` // the workers' voluntary context switches per unit
}

// split returns where the CPU time between readings a and b went, per
// unit of the n done between them, as the difference of their totals: a
// worker started meanwhile counts whole, one that exited by what it used
// since a.
func split(a, b cpuReading, n float64) cpuSplit {
	s := cpuSplit{Driver: (b.driver - a.driver).Seconds() / n, Of: len(b.workers)}
	workers := b.reaped - a.reaped
	var wake int64
	for pid, w := range b.workers {
		was := a.workers[pid]
		workers += w.cpu - was.cpu
		wake += w.wakeups - was.wakeups
		if w.cpu > was.cpu || w.wakeups > was.wakeups {
			s.Ran++
		}
	}
	for pid, w := range a.workers {
		if _, alive := b.workers[pid]; !alive {
			workers -= w.cpu // in b.reaped now, whole
		}
	}
	s.Workers = workers.Seconds() / n
	s.Wakeups = float64(wake) / n
	return s
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

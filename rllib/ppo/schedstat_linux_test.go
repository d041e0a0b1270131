package ppo

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// schedTimes are nanoseconds the kernel counted for the process's threads
// (/proc/self/task/*/schedstat): time on a CPU and time runnable but
// waiting for one (the run queue), for one thread (own) and for the
// others together (rest). A team's wall time is its threads' CPU time,
// their run-queue waits (a core taken by other processes) and their
// sleeps (a member parked waiting for another); the learner benchmarks
// split a step's wall time this way.
type schedTimes struct {
	ownRun, ownWait, restRun, restWait int64
}

// threadID is the calling thread's id (the owner locks its thread).
func threadID() int { return unix.Gettid() }

// readSched reads the schedstat of every thread of the process, the
// thread own's apart.
func readSched(own int) schedTimes {
	var s schedTimes
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return s
	}
	for _, e := range ents {
		b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%s/schedstat", e.Name()))
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		run, _ := strconv.ParseInt(f[0], 10, 64)
		wait, _ := strconv.ParseInt(f[1], 10, 64)
		if e.Name() == strconv.Itoa(own) {
			s.ownRun, s.ownWait = s.ownRun+run, s.ownWait+wait
		} else {
			s.restRun, s.restWait = s.restRun+run, s.restWait+wait
		}
	}
	return s
}

// minus is what the threads accrued since an earlier reading.
func (s schedTimes) minus(e schedTimes) schedTimes {
	return schedTimes{s.ownRun - e.ownRun, s.ownWait - e.ownWait, s.restRun - e.restRun, s.restWait - e.restWait}
}

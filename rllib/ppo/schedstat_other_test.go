//go:build !linux

package ppo

// schedTimes are zero where the kernel's per-thread schedstat is missing.
type schedTimes struct {
	ownRun, ownWait, restRun, restWait int64
}

func threadID() int { return 0 }

func readSched(int) schedTimes { return schedTimes{} }

func (s schedTimes) minus(schedTimes) schedTimes { return s }

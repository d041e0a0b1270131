package main

import (
	"fmt"
	"strings"
	"time"
)

// microFlags is what `gray microbenchmark` was given, for checkMicroFlags.
type microFlags struct {
	trials   int
	duration time.Duration
	cpus     int
	queued   int
	filter   string
	scaling  bool
	address  string
	// changed reports whether a flag was given on the command line.
	changed func(name string) bool
}

// checkMicroFlags refuses flags that contradict each other or cannot be
// measured, each with one line that names the flag and what to give
// instead: the three measurements (the rows, --scaling and --queued) take
// different flags, and one that would be ignored says so rather than
// running something the user did not ask for.
func checkMicroFlags(f microFlags) error {
	switch {
	case f.trials < 1 || f.duration <= 0:
		return fmt.Errorf("--trials must be at least 1 and --duration positive")
	case f.cpus < 0:
		return fmt.Errorf("--cpus %d: give the session's CPUs, 0 or more (0: all logical CPUs)", f.cpus)
	case f.queued < 0:
		return fmt.Errorf("--queued %d: give how many no-op tasks to queue, 1 or more (or leave it out to measure the rows)", f.queued)
	case f.scaling && f.changed("cpus"):
		return fmt.Errorf("--scaling runs a session at each CPU count of --scaling-cpus: drop --cpus (give --scaling-cpus %d instead)", f.cpus)
	case f.scaling && f.queued > 0:
		return fmt.Errorf("--scaling and --queued are two measurements: give one of them")
	case f.scaling && f.filter != "":
		return fmt.Errorf("--scaling runs the async rows (%s): drop --filter", scalingFilter)
	case f.scaling && f.address != "":
		return fmt.Errorf("--scaling measures sessions on this machine: drop --address")
	case f.queued > 0 && f.filter != "":
		return fmt.Errorf("--queued measures queueing instead of the rows: drop --filter")
	}
	if f.filter != "" && !f.scaling && f.queued == 0 {
		var names []string
		for _, b := range benchmarks() {
			if selected(b.name, f.filter) {
				return nil
			}
			names = append(names, b.name)
		}
		return fmt.Errorf("--filter %q matches no row; the rows are: %s", f.filter, strings.Join(names, "; "))
	}
	return nil
}

//go:build !unix

package ppo

// processCPUNanos is 0 where getrusage is missing: the benchmarks then
// report a CPU time of 0.
func processCPUNanos() int64 { return 0 }

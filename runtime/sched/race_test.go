//go:build race

package sched

// raceEnabled shortens the random test under -race, which is ten times
// slower; the core is single-threaded, so the race pass adds little there.
const raceEnabled = true

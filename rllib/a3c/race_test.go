//go:build race

package a3c

// raceEnabled skips the learning test under -race, which is too slow for
// it; the non-race pass runs it.
const raceEnabled = true

//go:build race

package dqn

// raceEnabled skips the learning test under the race detector, which makes
// it too slow; the non-race test pass runs it.
const raceEnabled = true

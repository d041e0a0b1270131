//go:build !race

package a3c

// raceEnabled is false without -race: the learning test runs.
const raceEnabled = false

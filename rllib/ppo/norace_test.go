//go:build !race

package ppo

// raceEnabled is false without -race: the recurrent learning test runs.
const raceEnabled = false

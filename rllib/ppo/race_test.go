//go:build race

package ppo

// raceEnabled skips the recurrent learning test under -race, which is too
// slow for it; the non-race pass runs it.
const raceEnabled = true

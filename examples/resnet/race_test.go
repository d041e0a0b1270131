//go:build race

package main

// raceEnabled skips the training tests under -race, which makes them too
// slow; make test's second, non-race pass runs them.
const raceEnabled = true

//go:build race

package models

// raceEnabled makes the float32 training tests skip the portable loops
// under -race (pure Go loops run many times slower instrumented, and they
// start no goroutines); the non-race pass and -tags purego run them.
const raceEnabled = true

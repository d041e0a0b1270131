//go:build !race

package models

// raceEnabled is false without -race: the float32 training tests run the
// portable loops too.
const raceEnabled = false

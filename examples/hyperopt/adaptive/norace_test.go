//go:build !race

package main

// raceEnabled is false without -race: the training tests run.
const raceEnabled = false

//go:build !race

package hyperopt

// raceEnabled is false without -race: the training tests run.
const raceEnabled = false

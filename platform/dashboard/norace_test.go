//go:build !race

package dashboard

// raceEnabled is false without -race: the browser tests run.
const raceEnabled = false

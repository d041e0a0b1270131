//go:build race

package dashboard

// raceEnabled skips the browser tests under -race: they start chromium,
// build cmd/train and train with it, which the detector slows several
// times over; `make test` runs them in its second pass, without -race.
const raceEnabled = true

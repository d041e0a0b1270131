//go:build !race

package fashionmnist

// raceEnabled is false without -race: TestLoadInstalled reads everything.
const raceEnabled = false

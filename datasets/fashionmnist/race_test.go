//go:build race

package fashionmnist

// raceEnabled makes TestLoadInstalled read only a prefix of the installed
// dataset: decompressing all of it under -race takes minutes.
const raceEnabled = true

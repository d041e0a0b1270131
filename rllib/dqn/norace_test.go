//go:build !race

package dqn

const raceEnabled = false

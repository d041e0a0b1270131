//go:build !linux

package sdk

// setParentDeathSignal has no equivalent outside Linux; the parent-pid
// watchdog alone makes the plugin exit there.
func setParentDeathSignal() {}

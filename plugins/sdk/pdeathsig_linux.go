package sdk

import "golang.org/x/sys/unix"

// setParentDeathSignal asks Linux to SIGKILL this process when the thread
// that started it in the host exits, which covers a SIGKILLed host at once.
// (The parent-pid watchdog covers the rest, within a poll interval.)
func setParentDeathSignal() {
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
}

package workerproc

import "syscall"

// sysProcAttr makes the kernel kill a worker when the driver dies, even by
// SIGKILL, so no worker outlives its driver. (Workers also exit when their
// connection to the driver closes.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: false}
}

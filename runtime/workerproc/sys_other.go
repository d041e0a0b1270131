//go:build !linux

package workerproc

import "syscall"

// sysProcAttr: without Pdeathsig, workers rely on exiting when their
// connection to the driver closes.
func sysProcAttr() *syscall.SysProcAttr { return nil }

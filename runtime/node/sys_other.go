//go:build !linux

package node

import "syscall"

// sysProcAttr: without Pdeathsig, workers rely on exiting when their
// connection to the driver closes.
func sysProcAttr() *syscall.SysProcAttr { return nil }

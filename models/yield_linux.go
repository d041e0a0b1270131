package models

import "syscall"

// osYield gives the thread's core to any thread waiting for it
// (sched_yield), returning at once when none is. The call cannot block,
// so the Go runtime need not be told of it.
func osYield() { syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }

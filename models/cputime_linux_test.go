package models

import "runtime"

// threadCPUNanos returns the CPU time the calling OS thread has used. The
// benchmarks report it beside wall time because the shared test machines
// are oversubscribed: CPU time per operation stays meaningful when wall
// time includes waiting for a core.
//
// It reads the thread's CPU clock, not getrusage: getrusage's figures for a
// thread advance in scheduler ticks, and an operation shorter than a few
// ticks measured between waits came out at a quarter of its real cost.
func threadCPUNanos() int64 { return int64(threadCPU()) }

func lockThread()   { runtime.LockOSThread() }
func unlockThread() { runtime.UnlockOSThread() }

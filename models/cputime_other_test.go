//go:build !linux

package models

func threadCPUNanos() int64 { return 0 }
func lockThread()           {}
func unlockThread()         {}

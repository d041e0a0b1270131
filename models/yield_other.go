//go:build !linux

package models

import "runtime"

// osYield lets other goroutines run; without sched_yield it is the
// nearest a watching goroutine has to giving up its core.
func osYield() { runtime.Gosched() }

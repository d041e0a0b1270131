package models

import (
	"runtime"
	"time"
)

// TeamTrace is what a traced team measured of its Runs (Team.Trace): the
// CPU time of the threads that ran them, not wall time, so it stays
// meaningful on a machine where the team's goroutines wait for cores.
type TeamTrace struct {
	// Runs is the number of Runs with more than one part.
	Runs int
	// Serial is the owner's CPU time between Runs: work no member shares.
	Serial time.Duration
	// Path is, summed over Runs, the CPU time of the goroutine that spent
	// the most on its parts: with Serial, the critical path a machine with
	// a core per member would take.
	Path time.Duration
	// Work is the CPU time of every part of every Run.
	Work time.Duration
}

// teamTracer measures a traced team's Runs.
type teamTracer struct {
	TeamTrace
	busy []time.Duration // this Run's parts' CPU time per goroutine
	// phases are a RunSynced's CPU times per goroutine and phase, and
	// actions the CPU time of its sync actions.
	phases  [][]time.Duration
	actions time.Duration
	// left is the owner's thread CPU time when the last Run returned (0
	// before the first).
	left time.Duration
}

// Trace starts measuring the team's Runs (on: a fresh count) or stops it,
// and returns what was measured since the last call that started it. It is
// for benchmarks that look for a step's critical path: the owner must stay
// on one OS thread (runtime.LockOSThread) while tracing, and the thread
// CPU clocks are read only on Linux (elsewhere every figure is zero).
func (t *Team) Trace(on bool) TeamTrace {
	var got TeamTrace
	if t.tracer != nil {
		got = t.tracer.TeamTrace
	}
	t.tracer = nil
	if on {
		t.tracer = &teamTracer{busy: make([]time.Duration, t.size)}
	}
	return got
}

// Traced returns what the team has measured since Trace started it, and
// goes on measuring: a benchmark takes the difference between two calls
// for the steps between them. It is zero while the team is not traced.
func (t *Team) Traced() TeamTrace {
	if t == nil || t.tracer == nil {
		return TeamTrace{}
	}
	return t.tracer.TeamTrace
}

// Minus is what tr measured beyond an earlier reading of the same trace.
func (tr TeamTrace) Minus(earlier TeamTrace) TeamTrace {
	return TeamTrace{
		Runs: tr.Runs - earlier.Runs, Serial: tr.Serial - earlier.Serial,
		Path: tr.Path - earlier.Path, Work: tr.Work - earlier.Work,
	}
}

// traced wraps a Run's fn to count each part's thread CPU time against the
// goroutine that runs it (part k runs on goroutine k mod size), and
// counts the owner's time since the last Run as serial.
func (tr *teamTracer) traced(size int, fn func(k int)) func(k int) {
	if now := threadCPU(); tr.left != 0 {
		tr.Serial += now - tr.left
	}
	clear(tr.busy)
	return func(k int) {
		// Both clock readings must be of the same thread's clock.
		runtime.LockOSThread()
		start := threadCPU()
		fn(k)
		tr.busy[k%size] += threadCPU() - start
		runtime.UnlockOSThread()
	}
}

// done closes a Run: its busiest goroutine's time joins the path.
func (tr *teamTracer) done() {
	most := time.Duration(0)
	for _, b := range tr.busy {
		tr.Work += b
		most = max(most, b)
	}
	tr.Path += most
	tr.Runs++
	tr.left = threadCPU()
}

package models

import "time"

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

// teamTracer measures a traced team's Runs (each Run's own figures are
// its runTrace).
type teamTracer struct {
	TeamTrace
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
		t.tracer = &teamTracer{}
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

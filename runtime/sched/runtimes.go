package sched

import "time"

// Packing short tasks onto few workers.
//
// A burst of tiny tasks (a no-op takes a few µs) used to wake an idle
// worker per task while any was idle: on a machine with many CPUs every
// worker then ran a task or two per burst and went back to sleep, and the
// wake-ups (a futex or a socket token, a thread scheduled, the Go
// runtime's sysmon polling every 20 µs for a millisecond after each wake)
// cost far more CPU than the tasks. The shell times each function's tasks
// on its workers (RunTimes) and hands the short ones to the core as packed
// (Core.SubmitPacked): queued behind a worker that is already running, up
// to about PackBudget of work each, so a burst runs on as few workers as
// keep up with it. Only tasks shorter than PackShort are packed: longer
// ones still run side by side on idle workers. The core stays clock-free:
// it sees only the depth, and RunTimes is told the times.

// PackShort is the longest mean run time of a function whose tasks are
// packed: shorter than waking a sleeping worker costs, so a burst of them
// is done sooner and cheaper by a worker that is already running. Longer
// tasks are spread over idle workers as before, so they run side by side.
const PackShort = 50 * time.Microsecond

// PackBudget is how much queued work (by the function's mean run time) a
// packed task may wait behind on a busy worker: the latency packing may
// add, against the CPU a wake-up costs (a futex or socket token, a thread
// scheduled, and the Go runtime's sysmon polling every 20 µs for a
// millisecond in a process that leaves idleness).
const PackBudget = time.Millisecond

// sampleMax is the most one timed task adds to its function's estimate:
// twice PackShort, so only a run of long samples unpacks a function.
const sampleMax = 2 * PackShort

// packSamples is how many of a function's tasks are timed before its
// tasks are packed: until then they are spread as before.
const packSamples = 4

// RunTimes estimates each function's run time on a worker (K names the
// function), to pack the short ones. The zero value is ready.
type RunTimes[K comparable] struct {
	m map[K]*runTime
}

// runTime is one function's estimated run time on a worker.
type runTime struct {
	mean float64 // nanoseconds, an exponentially weighted mean
	n    int
}

func (t *RunTimes[K]) of(k K) *runTime {
	r := t.m[k]
	if r == nil {
		if t.m == nil {
			t.m = map[K]*runTime{}
		}
		r = &runTime{}
		t.m[k] = r
	}
	return r
}

// Ran records that a task of k ran for d, as its worker timed it.
func (t *RunTimes[K]) Ran(k K, d time.Duration) { t.of(k).add(float64(d)) }

// Observed records a run time of a task of k that the shell measured
// itself (a worker that does not say): from its worker's previous result
// when it waited behind that task (queued), else from its send, to its
// result. A task sent to an idle worker is then timed with a wake-up and
// a round trip (more than a tiny task's run on a loaded machine), so such
// a time only ever lowers the estimate.
func (t *RunTimes[K]) Observed(k K, d time.Duration, queued bool) {
	r := t.of(k)
	if !queued && r.n > 0 && float64(d) > r.mean {
		return
	}
	r.add(float64(d))
}

func (r *runTime) add(d float64) {
	// A sample is wall time: a no-op preempted by the system reads
	// milliseconds on a busy machine. Clamped, one such sample moves a
	// short function's mean by an eighth of the clamp, not past PackShort
	// (which unpacked its tasks and spread the next burst over every idle
	// worker); a function that is long most of the time still reads long.
	d = min(d, float64(sampleMax))
	if r.n == 0 {
		r.mean = d
	} else {
		r.mean += (d - r.mean) / 8
	}
	r.n++
}

// Depth returns how many tasks a task of k may wait behind on a busy
// worker (Core.SubmitPacked), or 0 when k's tasks are not short enough to
// pack (or not yet timed).
func (t *RunTimes[K]) Depth(k K) int {
	r := t.m[k]
	if r == nil || r.n < packSamples || r.mean > float64(PackShort) {
		return 0
	}
	return int(float64(PackBudget) / max(r.mean, 1))
}

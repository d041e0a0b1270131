package node

import (
	"runtime"
	"time"

	"github.com/gray-ml/gray/runtime/task"
)

// Packing short tasks onto few workers.
//
// A burst of tiny tasks (a no-op takes a few µs) used to wake an idle
// worker per task while any was idle: on a machine with many CPUs every
// worker then ran a task or two per burst and went back to sleep, and the
// wake-ups (a futex or a socket token, a thread scheduled, the Go
// runtime's sysmon polling every 20 µs for a millisecond after each wake)
// cost far more CPU than the tasks. The node now times each function's
// tasks on its workers and hands the short ones to the core as packed
// (sched.Core.SubmitPacked): queued behind a worker that is already
// running, up to about packBudget of work each, so a burst runs on as few
// workers as keep up with it. Only tasks shorter than packShort are
// packed: longer ones still run side by side on idle workers. The core stays clock-free: it only sees the
// depth.

// packShort is the longest mean run time of a function whose tasks are
// packed: shorter than waking a sleeping worker costs, so a burst of them
// is done sooner and cheaper by a worker that is already running. Longer
// tasks are spread over idle workers as before, so they run side by side.
const packShort = 50 * time.Microsecond

// packBudget is how much queued work (by the function's mean run time) a
// packed task may wait behind on a busy worker: the latency packing may
// add, against the CPU a wake-up costs (a futex or socket token, a thread
// scheduled, and the Go runtime's sysmon polling every 20 µs for a
// millisecond in a process that leaves idleness).
const packBudget = time.Millisecond

// sampleMax is the most one timed task adds to its function's estimate:
// twice packShort, so only a run of long samples unpacks a function.
const sampleMax = 2 * packShort

// packSamples is how many of a function's tasks are timed before its
// tasks are packed: until then they are spread as before.
const packSamples = 4

// runTime is one function's estimated run time on a worker.
type runTime struct {
	mean float64 // nanoseconds, an exponentially weighted mean
	n    int
}

// now is the node's clock for timing tasks: the timeline's when it
// records one (so that p.sent serves both), else the node's own.
func (n *Node) now() int64 {
	if n.cfg.Events != nil {
		return n.cfg.Events.Now()
	}
	return int64(time.Since(n.epoch))
}

// timeRun records how long function task p ran on w, which just returned
// its result. The worker says (w.ran, its own clock around the call);
// failing that (a worker that does not report it), the node times it:
// from w's previous result if p waited behind that task, to now. A task
// sent to an idle worker is then timed from its send, which adds a
// wake-up and a round trip (more than a tiny task's run on a loaded
// machine), so such a time only ever lowers the estimate.
func (n *Node) timeRun(w *proc, p *pending) {
	r := n.runTimes[p.entry]
	if r == nil {
		if n.runTimes == nil {
			n.runTimes = map[*task.Entry]*runTime{}
		}
		r = &runTime{}
		n.runTimes[p.entry] = r
	}
	d := float64(w.ran)
	if w.ran < 0 {
		t := n.now()
		queued := p.sent < w.lastDone
		d = float64(t - max(p.sent, w.lastDone))
		w.lastDone = t
		if !queued && r.n > 0 && d > r.mean {
			return
		}
	}
	// A sample is wall time: a no-op preempted by the system reads
	// milliseconds on a busy machine. Clamped, one such sample moves a
	// short function's mean by an eighth of the clamp, not past packShort
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

// packDepth returns how many tasks a task of entry e may wait behind on a
// busy worker (sched.Core.SubmitPacked), or 0 when its tasks are not
// short enough to pack (or not yet timed).
func (n *Node) packDepth(e *task.Entry) int {
	r := n.runTimes[e]
	if r == nil || r.n < packSamples {
		return 0
	}
	if r.mean > float64(packShort) {
		return 0
	}
	return int(float64(packBudget) / max(r.mean, 1))
}

// packWorkers is how many of the node's workers may run packed tasks at
// once (sched.Config.PackWorkers): the processors of this machine, where
// its pool workers run. A session with more CPUs than the machine has
// (--cpus 16 on two cores) would otherwise wake a worker per packBudget of
// a burst, up to all of them, though no more than this many can run at
// once; each wake-up of an idle Go process costs it more than a thousand
// tiny tasks' worth of CPU (the scheduler's threads and sysmon spinning up,
// the connection's reader spinning and dozing before it sleeps again).
func packWorkers() int { return runtime.NumCPU() }

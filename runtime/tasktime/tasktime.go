// Package tasktime times function tasks on a node's workers, so that the
// scheduling core can pack short ones onto few workers (sched.RunTimes,
// sched.Core.SubmitPacked). The core and RunTimes are clock-free; this is
// where the clock is read: a task's send and its result are stamped here,
// and the run time is told to RunTimes.
//
// A worker that times its task (the Ran of its result) is believed. One
// that does not is timed by its node: from the send, or from the worker's
// previous result when the task waited behind that one.
package tasktime

import (
	"runtime"
	"time"

	"github.com/gray-ml/gray/runtime/events"
	"github.com/gray-ml/gray/runtime/sched"
)

// Timer times the tasks of each function (K names it) on the node's
// workers. It is not safe for concurrent use: the node calls it under its
// lock.
type Timer[K comparable] struct {
	events *events.Recorder
	epoch  time.Time
	times  sched.RunTimes[K]
}

// New returns a Timer reading the clock of ev, the node's timeline, when
// it records one (so that one stamp serves both), else its own.
func New[K comparable](ev *events.Recorder) *Timer[K] {
	return &Timer[K]{events: ev, epoch: time.Now()}
}

// Now is the time in the timer's clock, in nanoseconds: a task's send is
// stamped with it.
func (t *Timer[K]) Now() int64 {
	if t.events != nil {
		return t.events.Now()
	}
	return int64(time.Since(t.epoch))
}

// Returned records that a task of k, sent at sent (Now's clock), returned
// its result on a worker whose previous result came at last. ran is the
// run time the worker measured around the call, or negative from a worker
// that does not say. It returns when this result came, the worker's new
// last, or last unchanged when the worker timed the task.
func (t *Timer[K]) Returned(k K, ran, sent, last int64) int64 {
	if ran >= 0 {
		return t.returned(k, ran, sent, last, 0)
	}
	return t.returned(k, ran, sent, last, t.Now())
}

// returned is Returned at time now.
func (t *Timer[K]) returned(k K, ran, sent, last, now int64) int64 {
	if ran >= 0 {
		t.times.Ran(k, time.Duration(ran))
		return last
	}
	queued := sent < last // it waited behind the worker's previous task
	t.times.Observed(k, time.Duration(now-max(sent, last)), queued)
	return now
}

// Depth returns how many tasks a task of k may wait behind on a busy
// worker (sched.Core.SubmitPacked), or 0 when k's tasks are not short
// enough to pack (or not yet timed).
func (t *Timer[K]) Depth(k K) int { return t.times.Depth(k) }

// PackWorkers is how many of a node's workers may run packed tasks at once
// (sched.Config.PackWorkers): the processors of this machine, where its
// pool workers run. A session with more CPUs than the machine has
// (--cpus 16 on two cores) would otherwise wake a worker per PackBudget of
// a burst, up to all of them, though no more than this many can run at
// once; each wake-up of an idle Go process costs it more than a thousand
// tiny tasks' worth of CPU (the scheduler's threads and sysmon spinning up,
// the connection's reader spinning and dozing before it sleeps again).
func PackWorkers() int { return runtime.NumCPU() }

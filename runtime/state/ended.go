package state

import (
	"time"

	"github.com/gray-ml/gray/runtime/control"
)

// What an ended job's unfinished entries read as: its driver is gone, and
// with it every actor and task it ran, but nothing wrote their end (a
// driver that exits or is killed does not visit each entry first).
const (
	actorEndedWithJob = "its job ended"
	taskEndedWithJob  = "its job ended before the task finished"
)

// endedWithJob returns an actor of an ended job as it is now: dead, with
// the job's end as its own, unless it had died before.
func endedWithJob(a control.ActorEntry, ended time.Time) control.ActorEntry {
	if ended.IsZero() || a.State == control.ActorDead {
		return a
	}
	a.State, a.Death, a.Ended = control.ActorDead, actorEndedWithJob, ended
	return a
}

// taskEndedWithJobOf returns a task of an ended job as it is now: one that
// was still queued or running failed when the job ended.
func taskEndedWithJobOf(t control.TaskEntry, ended time.Time) control.TaskEntry {
	if ended.IsZero() || (t.State != control.TaskSubmittedState && t.State != control.TaskRunning) {
		return t
	}
	t.State, t.Error, t.Ended = control.TaskFailed, taskEndedWithJob, ended
	return t
}

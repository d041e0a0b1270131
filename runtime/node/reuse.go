package node

import (
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// hostActor makes pool worker id, started and idle and now out of the
// core's pool (see sched's reuse.go), the worker of actor a: the creation
// task and the calls go to it as they would to a new process once it
// connected, so creating the actor costs no process start.
func (n *Node) hostActor(a *actor, id sched.WorkerID) {
	w := n.workers[id]
	if w == nil || w.dead {
		// The core takes only connected workers, and a death reaches the
		// core and this table under the same lock; fail loudly if not.
		n.actorDied(a, &task.TaskError{Function: a.typ, Message: "its pool worker was gone before the actor started on it", Cause: task.ErrWorkerDied})
		return
	}
	w.actor = a
	a.w = w
	if a.ft != nil {
		a.ft.starting = false // a restart counts from here (restart.go)
	}
	n.ctrl.ActorPlaced(a.id, w.name)
	n.pump(a)
}

package node

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/task"
)

// Submissions made again by a call or task that runs a second time.
//
// What a worker submits takes its ID from the ID of the call or task it
// runs (worker.NewTaskID: ids.Child of it, counted from 1). A call that
// runs again (an actor's calls replayed after a restart, restart.go; a
// task run again after its node died, rerun, or to rebuild its results,
// rebuild) therefore submits the same IDs again. Those tasks exist
// already: the actor it created may still live, the call it made to
// another actor changed that actor's state, and the task it submitted may
// still run or have stored its results. submittedBefore finds them, and
// the second submission is dropped: the handle and the references the
// second run gets are those of the first.

// submittedBefore reports whether task s, submitted by worker w, exists
// already because an earlier run of w's current call or task submitted
// it; then it is not submitted again.
//
//   - An actor creation whose actor exists (alive, restarting, or dead):
//     the actor is kept, its resources are not taken twice. One that died
//     with a node comes back through its own restart (restartActor), not
//     through a second creation.
//   - A method call or task whose first result is stored: it ran. (A
//     call's result lost with its node counts as gone, below.)
//   - A task being rebuilt: it runs now.
//   - A method call the target actor holds, queued or running, when w's
//     call runs again: a call its actor replays itself after dying with
//     the same node is not made twice.
//   - A method call that a replaying actor's call makes and that ran (it
//     is in its target's replay log) but whose result is gone: made again,
//     it would change the target's state twice. The replayed call's Get
//     fails with ErrLostActorMethod instead (its result is dropped
//     anyway; the state it rebuilds misses what it did with the value).
//
// Anything else runs: the first run did not submit it, or its results are
// gone. A function task then runs again; so does an actor call made by a
// task run again (a task rebuilt from lineage that reads an actor asks it
// again, as before its result was lost). A function task submitted again
// while its first run is still queued or running runs twice; result keeps
// the first result stored.
func (n *Node) submittedBefore(w *proc, s *task.Spec) bool {
	switch s.Kind {
	case task.KindActorCreate:
		a := n.actors[s.ID]
		if a == nil {
			return false
		}
		if !a.constructing() {
			// The references inside its arguments were claimed for the
			// constructor again (MsgContain before MsgSubmit); it ran.
			n.constructed(s)
		}
		return true
	case task.KindFunc:
		if _, ok := n.store.Get(s.Return(0)); ok || n.rec.Rebuilding(s.ID) {
			return true
		}
	case task.KindActorMethod:
		o, stored := n.store.Get(s.Return(0))
		if stored && (o.Err == nil || !errors.Is(o.Err, task.ErrObjectLost)) {
			return true
		}
		a := n.actors[s.Actor()]
		if a == nil || !n.reexecuting(w) {
			return false
		}
		if n.callKnown(a, s) {
			return true
		}
		if w.actor != nil && n.rs.Logged(a.id, s.ID) {
			// A replaying actor's call made this one, which ran (the
			// target's log says so) but whose result is gone: made
			// again, it would change the target's state twice.
			if !stored {
				n.failGone(s)
			}
			return true
		}
	}
	return false
}

// failGone stores, as the results of call s, which ran once and whose
// results were freed since, a lost-object error saying so.
func (n *Node) failGone(s *task.Spec) {
	for i := range s.Returns() {
		id := s.Return(i)
		n.putLocked(id, task.Object{Err: task.Lost(id, task.ErrLostActorMethod,
			fmt.Sprintf("a replayed call asks again for the result of %s, freed since; the call is not made twice", s.Func), nil)})
	}
}

// constructing reports whether a's constructor has yet to finish.
func (a *actor) constructing() bool {
	for _, ps := range [][]*pending{a.inflight, a.queue} {
		if len(ps) > 0 && ps[0].spec.Kind == task.KindActorCreate {
			return true
		}
	}
	return false
}

// reexecuting reports whether worker w runs a call or task a second time:
// an actor's call (or constructor) replayed after a restart, or a task
// run again after its node died or to rebuild its results.
func (n *Node) reexecuting(w *proc) bool {
	if a := w.actor; a != nil {
		return len(a.inflight) > 0 && a.inflight[0].again
	}
	p, ok := n.core.Running(w.id)
	if !ok {
		return false
	}
	return n.rec.Rebuilding(p.spec.ID) || n.rec.Runs(p) > 0
}

// callKnown reports whether actor a holds call s already, queued or
// running (one its restart queued again, say).
func (n *Node) callKnown(a *actor, s *task.Spec) bool {
	for _, ps := range [][]*pending{a.queue, a.inflight} {
		for _, p := range ps {
			if p.spec.ID == s.ID {
				return true
			}
		}
	}
	return false
}

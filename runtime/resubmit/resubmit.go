// Package resubmit decides whether a task a worker submits is new, or a
// repeat of one an earlier run of the worker's call submitted already.
//
// What a worker submits takes its ID from the ID of the call or task it
// runs (worker.NewTaskID: ids.Child of it, counted from 1). A call that
// runs again (an actor's calls replayed after a restart, runtime/restart;
// a task run again after its node died, or to rebuild its results,
// runtime/recovery) therefore submits the same IDs again. Those tasks
// exist already: the actor it created may still live, the call it made
// to another actor changed that actor's state, and the task it submitted
// may still run or have stored its results. A repeat is dropped: the
// handle and the references the second run gets are those of the first.
//
// The decision is pure: the shell (runtime/node) answers the questions it
// asks (Facts), each only when the decision gets to it, since some cost a
// lookup or a scan of an actor's queue. The tests (resubmit_test.go) are
// a table of facts and the verdict each gives.
package resubmit

import "github.com/gray-ml/gray/runtime/task"

// Facts are what the shell knows about a task submitted by a worker.
type Facts interface {
	// ActorExists: an actor with the creation task's ID exists (alive,
	// restarting or dead).
	ActorExists() bool
	// Constructing: that actor's constructor has yet to finish.
	Constructing() bool
	// Stored: the task's first return is stored; lost: as the error of
	// an object lost (task.ErrObjectLost).
	Stored() (stored, lost bool)
	// Rebuilding: the task runs now, to rebuild its results.
	Rebuilding() bool
	// TargetHere: the actor the call is made to lives on this node.
	TargetHere() bool
	// Again: the submitting worker runs its call or task a second time (a
	// replay after a restart, a run again after its node died, a rebuild).
	Again() bool
	// Held: the target actor holds the call already, queued or running
	// (one its own restart queued again, say).
	Held() bool
	// Logged: the submitter is an actor, and the target actor's replay
	// log holds the call: it ran.
	Logged() bool
}

// Verdict says what becomes of a submission.
type Verdict uint8

// The verdicts.
const (
	// New: submit it.
	New Verdict = iota
	// Repeat: drop it; the first submission stands.
	Repeat
	// Constructed: drop it, an actor creation whose constructor ran: the
	// references inside its arguments, claimed for it again, are released.
	Constructed
	// Gone: drop it, a call that ran once and whose results are gone:
	// store as its results a lost-object error saying it is not made
	// twice (task.ErrLostActorMethod).
	Gone
)

// Decide says whether a task of kind k, submitted by a worker, is new.
//
//   - An actor creation whose actor exists (alive, restarting, or dead):
//     the actor is kept, its resources are not taken twice. One that died
//     with a node comes back through its own restart, not through a second
//     creation.
//   - A method call or task whose first result is stored: it ran. (A
//     call's result lost with its node counts as gone, below.)
//   - A task being rebuilt: it runs now.
//   - A method call the target actor holds, queued or running, when the
//     submitter's call runs again: a call its actor replays itself after
//     dying with the same node is not made twice.
//   - A method call that a replaying actor's call makes and that ran (it
//     is in its target's replay log) but whose result is gone: made again,
//     it would change the target's state twice. The replayed call's Get
//     fails with ErrLostActorMethod instead (its result is dropped anyway;
//     the state it rebuilds misses what it did with the value).
//
// Anything else is new: the first run did not submit it, or its results
// are gone. A function task then runs again; so does an actor call made by
// a task run again (a task rebuilt from lineage that reads an actor asks
// it again, as before its result was lost). A function task submitted
// again while its first run is still queued or running runs twice; the
// shell keeps the first result stored.
func Decide(k task.Kind, f Facts) Verdict {
	switch k {
	case task.KindActorCreate:
		switch {
		case !f.ActorExists():
			return New
		case f.Constructing():
			return Repeat
		default:
			return Constructed
		}
	case task.KindFunc:
		if stored, _ := f.Stored(); stored || f.Rebuilding() {
			return Repeat
		}
	case task.KindActorMethod:
		stored, lost := f.Stored()
		switch {
		case stored && !lost:
			return Repeat
		case !f.TargetHere() || !f.Again():
			return New
		case f.Held():
			return Repeat
		case !f.Logged():
			return New
		case stored:
			return Repeat // its loss is stored already
		default:
			return Gone
		}
	}
	return New
}

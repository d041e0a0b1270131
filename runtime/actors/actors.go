// Package actors carries out the decisions about the driver's actors:
// what each actor's call queue decides (runtime/actorq: a call sent,
// failed or left unsent, the actor dead or gone) and what the restart
// core decides (runtime/restart: an actor recreated with its calls
// replayed, its checkpoints saved, the actors it created ended with it).
// It holds the restart core and the actors' checkpoints; everything else
// (the actors' records, their workers, the objects their calls hold, the
// scheduling core) is the node's, reached through Host, a small interface
// the node implements. Like the cores it drives, a Driver is called under
// the node's lock and never blocks.
package actors

import (
	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/control"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/task"
)

// Call is the node's record of one of an actor's tasks, as its queue and
// the restart core see it.
type Call interface {
	actorq.Call
	restart.Call
}

// Actor is the node's record of one actor: its call queue (the node's
// record embeds an actorq.Actor, whose methods these are).
type Actor[C Call] interface {
	comparable
	ID() ids.ActorID
	Type() string
	Step(ev actorq.Event)
	Effects() []actorq.Effect[C]
	Queued() []C
	Inflight() []C
	Idle() bool
	Dead() bool
	Draining() bool
	Killed() bool
	Restartable() bool
}

// Host is what the node does for the Driver: the actions a decision
// about an actor turns into.
type Host[C Call, A Actor[C]] interface {
	// Actor returns the record of actor id, if the node has it.
	Actor(id ids.ActorID) (A, bool)
	// Send hands call c to a's worker.
	Send(a A, c C)
	// Fail stores err as c's result; quiet: the failure was intended (a
	// killed actor's calls), so it is not reported.
	Fail(c C, err *task.TaskError, quiet bool)
	// ArgFailed fails c because one of its arguments failed.
	ArgFailed(c C)
	// Died tells those who wait on a (its direct callers, the actor
	// table) that it died of err.
	Died(a A, err *task.TaskError)
	// Free frees the resources dead actor a held. Stop then stops its
	// process.
	Free(a A)
	Stop(a A)
	// Unplace lets go of what a's calls in flight held in its dead
	// process before its restart. Place then asks for a new worker on the
	// resources a holds.
	Unplace(a A)
	Place(a A)
	// Replay makes a call that runs s (the record of a call as submitted,
	// or the restore of a checkpoint) again on restarted actor a; discard
	// drops its results.
	Replay(a A, s *task.Spec, discard bool) C
	// Worker returns the name of a's worker, or false when it has none.
	Worker(a A) (string, bool)
	// Report records and reports e, a failure that fails no task.
	Report(e *task.TaskError)
	// Kill kills a, as gray.Kill does: it steps a's queue with an
	// actorq.Kill for why (through the Driver's Step), and reports none
	// of the failures that follow, which are intended.
	Kill(a A, why *task.TaskError)
}

// Objects is what the Driver asks of the objects' keeper
// (objects.Keeper implements it).
type Objects interface {
	// ClaimLineage and ReleaseLineage claim and release the reference
	// arguments of s, a task in a replay log, so they can be rebuilt for
	// the replay.
	ClaimLineage(s *task.Spec)
	ReleaseLineage(s *task.Spec)
	// Unsent takes back what the arguments of s hold for it: it was never
	// sent.
	Unsent(s *task.Spec)
	// ReleaseKept releases the objects actor a's process kept.
	ReleaseKept(a ids.ActorID)
}

// Driver carries out the decisions of the driver's actor queues and of
// the restart core.
type Driver[C Call, A Actor[C]] struct {
	host  Host[C, A]
	objs  Objects
	rs    *restart.Core
	ckpts control.Checkpoints
}

// New returns a Driver acting through host and objs, with restart core
// rs and checkpoints kept in ckpts.
func New[C Call, A Actor[C]](host Host[C, A], objs Objects, rs *restart.Core, ckpts control.Checkpoints) *Driver[C, A] {
	return &Driver[C, A]{host: host, objs: objs, rs: rs, ckpts: ckpts}
}

// Step feeds a's queue ev and carries out its effects.
func (d *Driver[C, A]) Step(a A, ev actorq.Event) {
	a.Step(ev)
	for _, e := range a.Effects() {
		switch e.Kind {
		case actorq.Send:
			d.logSend(a, e.Call)
			d.host.Send(a, e.Call)
		case actorq.ArgFailed:
			d.host.ArgFailed(e.Call)
		case actorq.Unsent:
			d.objs.Unsent(e.Call.Spec())
		case actorq.Died:
			d.host.Died(a, e.Err)
		case actorq.Fail:
			// A killed actor's calls hold ErrActorDead, but that is no
			// failure to print or list.
			d.host.Fail(e.Call, e.Err, e.Quiet)
		case actorq.Gone:
			d.gone(a)
		}
	}
}

// Returned takes the result of task tid off a's calls in flight: the
// call it belongs to, or false when a was killed (its calls failed
// already).
func (d *Driver[C, A]) Returned(a A, tid ids.TaskID) (C, bool) {
	a.Step(actorq.Returned{ID: tid})
	for _, e := range a.Effects() {
		if e.Kind == actorq.Ran {
			return e.Call, true
		}
	}
	var none C
	return none, false
}

// End ends a for why: its calls fail, its resources are freed and its
// process stops. Nothing when a is dead already.
func (d *Driver[C, A]) End(a A, why *task.TaskError) { d.Step(a, actorq.End{Why: why}) }

// gone frees what dead actor a held and stops its process.
func (d *Driver[C, A]) gone(a A) {
	d.objs.ReleaseKept(a.ID())
	d.host.Free(a)
	// Dead for good: its log's claims end; the actors it created end
	// with it when it allows no restarts.
	d.Restart(restart.Dropped{Actor: a.ID()})
	d.host.Stop(a)
}

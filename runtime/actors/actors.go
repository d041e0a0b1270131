// Package actors carries out the decisions about the driver's actors:
// what each actor's call queue decides (runtime/actorq: a call sent,
// failed or left unsent, the actor dead or gone) and what the restart
// core decides (runtime/restart: an actor recreated with its calls
// replayed, its checkpoints saved, the actors it created ended with it).
// It holds the node's actors (each the node's record, made through
// Host.New), the restart core and the actors' checkpoints, keeps the
// control store's actor table, and decides what an actor task submitted
// to the node becomes (submit.go: refused, a new actor, a call queued; a
// kill, a release). Everything else (the actors' workers, the objects
// their calls hold, the scheduling core) is the node's, reached through
// Host, a small interface the node implements. Like the cores it drives,
// a Driver is called under the node's lock and never blocks.
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
	// New returns the record of the actor that creation task s makes (e
	// is its type's entry), with nothing queued.
	New(s *task.Spec, e *task.Entry) A
	// Up reports whether a's worker is connected: its calls can go out.
	Up(a A) bool
	// Wait asks for a worker for a, whose creation task was submitted.
	Wait(a A)
	// Send hands call c to a's worker.
	Send(a A, c C)
	// Fail stores err as c's result.
	Fail(c C, err *task.TaskError)
	// ArgFailed fails c because one of its arguments failed.
	ArgFailed(c C)
	// Quietly runs f, reporting none of the failures stored meanwhile:
	// they were intended (a killed actor's).
	Quietly(f func())
	// Died tells a's direct callers that it died of err (the actor
	// table learns it from the Driver).
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
	// Stopping reports whether the node restarts nothing: it is shutting
	// down, or cannot start workers.
	Stopping() bool
}

// Table is the control store's actor table (control.Store implements
// it), which a cluster shares: the Driver records each actor's creation,
// worker and death there, and reads it to tell a call to an actor of
// another node from one to an actor unknown in the session.
type Table interface {
	ActorCreated(id ids.ActorID, typ string, worker string)
	ActorPlaced(id ids.ActorID, worker string)
	Actor(id ids.ActorID) (control.ActorRecord, bool)
	ActorDied(id ids.ActorID, reason string)
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
	host   Host[C, A]
	objs   Objects
	table  Table
	rs     *restart.Core
	ckpts  control.Checkpoints
	actors map[ids.ActorID]A // every actor created on the node, dead ones included
}

// New returns a Driver acting through host and objs, keeping the actor
// table table, with restart core rs and checkpoints kept in ckpts.
func New[C Call, A Actor[C]](host Host[C, A], objs Objects, table Table, rs *restart.Core, ckpts control.Checkpoints) *Driver[C, A] {
	return &Driver[C, A]{host: host, objs: objs, table: table, rs: rs, ckpts: ckpts, actors: map[ids.ActorID]A{}}
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
			d.table.ActorDied(a.ID(), e.Err.Message)
		case actorq.Fail:
			if e.Quiet {
				// A killed actor's calls hold ErrActorDead, but that is
				// no failure to print or list.
				d.host.Quietly(func() { d.host.Fail(e.Call, e.Err) })
			} else {
				d.host.Fail(e.Call, e.Err)
			}
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

// Finished handles the end of call c of a, run on worker, whose results
// the node stored (failed: the error of the first that failed, if any):
// a constructor that failed ends a, and so does a release once a has
// nothing left to run.
func (d *Driver[C, A]) Finished(a A, c C, worker string, failed *task.TaskError) {
	if c.Kind() == task.KindActorCreate && failed != nil {
		d.End(a, &task.TaskError{Function: a.Type(), Worker: worker, Message: "its constructor failed: " + task.FirstLine(failed.Message), Cause: failed})
	}
	d.Step(a, actorq.Finished{})
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

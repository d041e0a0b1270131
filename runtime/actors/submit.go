package actors

import (
	"fmt"
	"iter"
	"maps"

	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/task"
)

// What the program asks of the node's actors: an actor created, a call
// of one of its methods, gray.Kill, the last handle to an actor gone.
// The Driver keeps the node's actors and the control store's actor
// table, so it decides which of these the node refuses, and what the
// others become on the actor's queue.

// Actor returns the record of actor id, or the zero A (a nil pointer)
// when the node has none: the actor lives on another node, or is
// unknown.
func (d *Driver[C, A]) Actor(id ids.ActorID) A { return d.actors[id] }

// Actors yields every actor created on the node, dead ones included, in
// no order.
func (d *Driver[C, A]) Actors() iter.Seq[A] { return maps.Values(d.actors) }

// Check returns why task s cannot be submitted to the node, or nil: a
// creation of an actor that exists already, or a call to an actor the
// actor table does not list (a handle from another session) or that lives
// on another node. Other kinds of tasks are not the Driver's: nil.
func (d *Driver[C, A]) Check(s *task.Spec) error {
	switch s.Kind {
	case task.KindActorCreate:
		if _, dup := d.actors[s.ID]; dup {
			return fmt.Errorf("actor %s exists already", s.ID)
		}
	case task.KindActorMethod:
		// The actor table lives in the control store, which a cluster
		// shares: an actor it lists but this node does not have lives on
		// another node.
		if _, known := d.table.Actor(s.Actor()); !known {
			return fmt.Errorf("calling %s: actor %s is unknown in this session (a handle from another session?)", s.Func, s.Actor())
		}
		if _, here := d.actors[s.Actor()]; !here {
			return fmt.Errorf("calling %s: actor %s lives on another node, and calls across nodes are not supported yet", s.Func, s.Actor())
		}
	}
	return nil
}

// Create records the actor that creation task s makes (e is its type's
// entry): the node's record (Host.New), the actor table's, and its replay
// log when its type allows restarts. Called once Check passed, before
// the task's arguments are asked for; Submit queues s next.
func (d *Driver[C, A]) Create(s *task.Spec, e *task.Entry) A {
	a := d.host.New(s, e)
	d.actors[s.ID] = a
	d.table.ActorCreated(s.ID, s.Func, "")
	d.created(a, s, e)
	return a
}

// Submit queues c, a's creation task or a call of one of a's methods,
// whose arguments were asked for. The creation waits for a worker, which
// the node asks for (Host.Wait); a call goes out in its turn, or fails at
// once when a is dead or released.
func (d *Driver[C, A]) Submit(a A, c C) {
	if c.Kind() == task.KindActorCreate {
		d.Step(a, actorq.Queued[C]{Call: c})
		d.host.Wait(a)
		return
	}
	d.Step(a, actorq.Queued[C]{Call: c, Up: d.host.Up(a)})
}

// Pump sends a's queued calls whose arguments exist, in order, if its
// worker is connected: an argument of one of them exists now.
func (d *Driver[C, A]) Pump(a A) { d.Step(a, actorq.Pump{Up: d.host.Up(a)}) }

// Placed handles a's worker, named worker, connecting: a restart counts
// from here, the actor table says where a lives, and a's queued calls go
// out.
func (d *Driver[C, A]) Placed(a A, worker string) {
	if a.Restartable() {
		d.Restart(restart.Placed{Actor: a.ID()})
	}
	d.table.ActorPlaced(a.ID(), worker)
	d.Pump(a)
}

// Kill ends actor id now, as gray.Kill does: its queued and running
// calls fail with ErrActorDead and its resources are freed. The failures
// are intended, so none is reported. An actor the node does not have is
// an error.
func (d *Driver[C, A]) Kill(id ids.ActorID) error {
	a, ok := d.actors[id]
	if !ok {
		return fmt.Errorf("gray: kill: actor %s is unknown in this session", id)
	}
	d.kill(a, &task.TaskError{Function: a.Type(), Message: "it was killed", Cause: task.ErrActorDead})
	return nil
}

// kill ends a for why, on purpose (Kill, or the end of the actor that
// created it): none of the failures that follow is reported.
func (d *Driver[C, A]) kill(a A, why *task.TaskError) {
	d.host.Quietly(func() { d.Step(a, actorq.Kill{Why: why}) })
}

// Direct reports whether calls of a may bypass the driver, from one
// actor's worker to a's (runtime/direct): not when a is dead or draining,
// nor when it may be restarted (its replay log is the Driver's, so its
// calls must pass here) or checkpoints (runtime/restart decides from the
// calls it saw run).
func (d *Driver[C, A]) Direct(a A) bool {
	if a.Dead() || a.Draining() || a.Restartable() {
		return false
	}
	e, err := task.Lookup(a.Type())
	return err == nil && e.CheckpointInterval == 0
}

// Release tells actor id that the program holds no handle to it: it ends
// once its queued calls are done, at once when it has a worker and no
// call. Nothing when the node does not have it.
func (d *Driver[C, A]) Release(id ids.ActorID) {
	if a, ok := d.actors[id]; ok {
		_, hasWorker := d.host.Worker(a)
		d.Step(a, actorq.Release{HasWorker: hasWorker})
	}
}

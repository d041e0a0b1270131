package restart

import (
	"fmt"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/task"
)

// Event is one input of Step: the types below.
type Event interface{ event() }

// Created: actor Actor's creation task Spec was submitted (reference
// arguments intact); MaxRestarts and NoRestarts are its type's. Effect:
// Claim for the record of Spec, when the actor may be restarted.
type Created struct {
	Actor       ids.ActorID
	Spec        *task.Spec
	MaxRestarts int
	NoRestarts  bool
}

// Adopted: actor Parent's process created actor Child. When Parent's type
// allows no restarts, Child ends with it (Dropped).
type Adopted struct{ Parent, Child ids.ActorID }

// Sent: method call Call (reference arguments intact) is being sent to
// actor Actor's process. Effect: Claim for its record, the first time.
type Sent struct {
	Actor ids.ActorID
	Call  *task.Spec
}

// Done: the result of call ID of actor Actor came back: it ran.
type Done struct {
	Actor ids.ActorID
	ID    ids.TaskID
}

// Placed: actor Actor's new process connected; a later death counts as
// another restart.
type Placed struct{ Actor ids.ActorID }

// Died: actor Actor's process died (Why), or its node did (NodeLost: its
// node died, or may have). Final: the actor ends anyway (no handle is
// left and nothing is left to run, the driver shuts down, or no worker
// can start). Checkpoint is its last checkpoint when it has one (Saved),
// CheckpointErr why it could not be read. Effects: Restart, or Die.
type Died struct {
	Actor         ids.ActorID
	Why           *task.TaskError
	NodeLost      bool
	Final         bool
	Checkpoint    []byte
	CheckpointErr error
}

// Checkpointed: actor Actor made a checkpoint of its state after call
// After (Data). Effect: Save, when After is a call the log holds as run
// (else the actor keeps replaying from its last checkpoint).
type Checkpointed struct {
	Actor ids.ActorID
	After ids.TaskID
	Data  []byte
}

// Saved: the checkpoint Save asked for is stored. The log forgets the
// calls up to After. Effects: Release for each.
type Saved struct {
	Actor ids.ActorID
	After ids.TaskID
}

// Dropped: actor Actor is dead for good. Effects: Release for every
// record; DropCheckpoint when it has one; End for each actor it created
// when its type allows no restarts.
type Dropped struct{ Actor ids.ActorID }

func (Created) event()      {}
func (Adopted) event()      {}
func (Sent) event()         {}
func (Done) event()         {}
func (Placed) event()       {}
func (Died) event()         {}
func (Checkpointed) event() {}
func (Saved) event()        {}
func (Dropped) event()      {}

// Kind says what an Effect asks the shell to do.
type Kind uint8

// The effects.
const (
	// Claim takes a Lineage claim on each reference argument of Spec.
	Claim Kind = iota + 1
	// Release ends the claims of Claim on Spec.
	Release
	// Restart starts Actor again (Count: its restarts so far): its new
	// process runs the creation task Spec, then Restore when not nil,
	// then Replay, in order, before the calls not yet sent.
	Restart
	// Die ends Actor for good with Err.
	Die
	// Save stores Data, the checkpoint Actor made after call Task, then steps
	// Saved (a failed save changes nothing; the shell reports it).
	Save
	// DropCheckpoint deletes Actor's checkpoint.
	DropCheckpoint
	// End kills Actor (as gray.Kill does) because Parent, which created
	// it and allows no restarts, ended.
	End
)

// Replay is a call a restarted actor runs again.
type Replay struct {
	Spec *task.Spec // the record, reference arguments intact
	// Discard: its results were stored the first time it ran; it runs
	// for its effect on the actor's state only.
	Discard bool
}

// Effect is one thing the shell must do, in the order given.
type Effect struct {
	Kind    Kind
	Actor   ids.ActorID
	Parent  ids.ActorID // End
	Spec    *task.Spec  // Claim, Release: a record; Restart: the creation task
	Restore *task.Spec  // Restart: the restore of the last checkpoint, or nil
	Replay  []Replay    // Restart
	Err     *task.TaskError
	Task    ids.TaskID // Save
	Data    []byte     // Save
	Count   int        // Restart
}

// Step feeds the core one event; its effects wait in Effects.
func (c *Core) Step(ev Event) {
	switch e := ev.(type) {
	case Created:
		if e.NoRestarts {
			c.owners[e.Actor] = nil
		}
		var l *log
		switch {
		case e.MaxRestarts != 0:
			l = &log{max: e.MaxRestarts}
		case c.cfg.Cluster && !e.NoRestarts:
			l = &log{max: c.cfg.NodeLoss, nodeLossOnly: true}
		default:
			return
		}
		l.starting = true
		l.create = c.record(e.Spec)
		c.actors[e.Actor] = l
	case Adopted:
		if kids, ok := c.owners[e.Parent]; ok {
			c.owners[e.Parent] = append(kids, e.Child)
		}
	case Sent:
		l := c.actors[e.Actor]
		if l == nil || e.Call.Kind != task.KindActorMethod {
			return
		}
		for _, x := range l.calls {
			if x.spec.ID == e.Call.ID { // a replay
				x.sent = true
				return
			}
		}
		l.calls = append(l.calls, &call{spec: c.record(e.Call), sent: true})
	case Done:
		if l := c.actors[e.Actor]; l != nil {
			for _, x := range l.calls {
				if x.spec.ID == e.ID {
					x.done = true
					return
				}
			}
		}
	case Placed:
		if l := c.actors[e.Actor]; l != nil {
			l.starting = false
		}
	case Died:
		c.died(e)
	case Checkpointed:
		if c.Logged(e.Actor, e.After) {
			c.emit(Effect{Kind: Save, Actor: e.Actor, Task: e.After, Data: e.Data})
		}
	case Saved:
		l := c.actors[e.Actor]
		if l == nil {
			return
		}
		l.saved = true
		for i, x := range l.calls {
			if x.spec.ID == e.After {
				for _, y := range l.calls[:i+1] {
					c.emit(Effect{Kind: Release, Actor: e.Actor, Spec: y.spec})
				}
				l.calls = append([]*call(nil), l.calls[i+1:]...)
				return
			}
		}
	case Dropped:
		if kids, ok := c.owners[e.Actor]; ok {
			delete(c.owners, e.Actor)
			for _, k := range kids {
				c.emit(Effect{Kind: End, Actor: k, Parent: e.Actor})
			}
		}
		l := c.actors[e.Actor]
		if l == nil {
			return
		}
		delete(c.actors, e.Actor)
		c.emit(Effect{Kind: Release, Actor: e.Actor, Spec: l.create})
		for _, x := range l.calls {
			c.emit(Effect{Kind: Release, Actor: e.Actor, Spec: x.spec})
		}
		if l.saved {
			c.emit(Effect{Kind: DropCheckpoint, Actor: e.Actor})
		}
	default:
		panic("restart: an event of a type Step does not know") // ev itself is not formatted: it would escape
	}
}

func (c *Core) died(e Died) {
	l := c.actors[e.Actor]
	die := func(more string) {
		why := *e.Why
		why.Message += more
		c.emit(Effect{Kind: Die, Actor: e.Actor, Err: &why})
	}
	switch {
	case l == nil || l.nodeLossOnly && !e.NodeLost || e.Final:
		die("")
		return
	case !l.starting && l.max >= 0 && l.restarts >= l.max:
		die(fmt.Sprintf("; it was restarted %s, the most its MaxRestarts allows", times(l.restarts)))
		return
	case l.saved && e.CheckpointErr != nil:
		die(fmt.Sprintf("; it could not be restarted: its checkpoint cannot be read (%v)", e.CheckpointErr))
		return
	}
	if !l.starting {
		l.restarts++
		l.starting = true
	}
	r := Effect{Kind: Restart, Actor: e.Actor, Spec: l.create, Count: l.restarts}
	if l.saved {
		r.Restore = &task.Spec{ID: ids.Child(e.Actor, 1<<62+uint64(l.restarts)), Kind: task.KindActorRestore,
			Func: l.create.Func, NumReturns: 1, Args: []task.Arg{{Data: e.Checkpoint}}}
	}
	// The calls that ran or were sent come first (the order they were
	// sent in); those an earlier restart queued and the dead process
	// never got stay in the shell's queue, behind them.
	for _, x := range l.calls {
		if x.done || x.sent {
			x.discard = x.discard || x.done
			x.done, x.sent = false, false
			r.Replay = append(r.Replay, Replay{Spec: x.spec, Discard: x.discard})
		}
	}
	c.emit(r)
}

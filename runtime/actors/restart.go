package actors

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/task"
)

// Actors that are recreated when their process or node dies
// (gray.MaxRestarts), with their calls replayed in order. The restart
// core keeps each such actor's log and decides whether it restarts and
// what its new process runs; the Driver tells it what happens (Restart)
// and carries out its effects here: the queue of the restarted actor,
// its checkpoints, the log's claims on arguments.

// Restart feeds the restart core ev and carries out its effects.
func (d *Driver[C, A]) Restart(ev restart.Event) {
	d.rs.Step(ev)
	for _, e := range d.rs.Effects() {
		switch e.Kind {
		case restart.Claim:
			d.objs.ClaimLineage(e.Spec)
		case restart.Release:
			d.objs.ReleaseLineage(e.Spec)
		case restart.Restart:
			if a, ok := d.actors[e.Actor]; ok {
				d.restart(a, e)
			}
		case restart.Die:
			if a, ok := d.actors[e.Actor]; ok {
				d.End(a, e.Err)
			}
		case restart.Save:
			d.save(e)
		case restart.DropCheckpoint:
			d.ckpts.DropCheckpoint(e.Actor)
		case restart.End:
			c, ok := d.actors[e.Actor]
			parent, pok := d.actors[e.Parent]
			if ok && pok {
				d.endChild(c, parent)
			}
		}
	}
}

// created starts a's log if its type (entry e) allows restarts. Called
// when the creation task s is submitted, before its arguments are
// resolved.
func (d *Driver[C, A]) created(a A, s *task.Spec, e *task.Entry) {
	d.Restart(restart.Created{Actor: a.ID(), Spec: s, MaxRestarts: e.MaxRestarts, NoRestarts: e.NoRestarts})
	if d.rs.Restartable(a.ID()) {
		d.Step(a, actorq.Restartable{})
	}
}

// logSend records call c as it is sent to a's worker (before its
// arguments are resolved).
func (d *Driver[C, A]) logSend(a A, c C) {
	if a.Restartable() {
		d.Restart(restart.Sent{Actor: a.ID(), Call: c.Spec()})
	}
}

// Ran records that call c of a ran.
func (d *Driver[C, A]) Ran(a A, c C) {
	if a.Restartable() {
		d.Restart(restart.Done{Actor: a.ID(), ID: c.Spec().ID})
	}
}

// Lost handles the death of a's process (why): a restarts, or dies (for
// good when the node restarts nothing, Host.Stopping). nodeLost says its
// node died (or may have: a worker on another node), which a cluster's
// actors survive by default.
func (d *Driver[C, A]) Lost(a A, why *task.TaskError, nodeLost bool) {
	ev := restart.Died{Actor: a.ID(), Why: why, NodeLost: nodeLost,
		Final: a.Dead() || a.Killed() || d.host.Stopping() || a.Draining() && a.Idle()}
	if d.rs.Saved(a.ID()) {
		data, ok, err := d.ckpts.Checkpoint(a.ID())
		if err == nil && !ok {
			err = errors.New("none is stored")
		}
		ev.Checkpoint, ev.CheckpointErr = data, err
	}
	d.Restart(ev)
}

// Replayed handles the results of c, a call run again only to rebuild
// a's state (or the restore of a checkpoint) on worker: its returns were
// stored the first time, so the node drops them. A restore whose first
// return holds an error ends a.
func (d *Driver[C, A]) Replayed(a A, c C, worker string, results []task.Object) {
	d.Ran(a, c)
	var failed *task.TaskError
	if len(results) > 0 {
		failed = results[0].Err
	}
	if c.Kind() == task.KindActorRestore && failed != nil {
		line, _, _ := strings.Cut(failed.Message, "\n")
		d.End(a, &task.TaskError{Function: a.Type(), Worker: worker, Message: "restoring its checkpoint after a restart failed: " + line, Cause: failed})
	}
}

// restart carries out the restart core's Restart effect e for a: it
// queues, in front of the calls not yet sent, the creation task, the
// restore of its checkpoint and the calls to replay (restart.Queue), and
// has the node ask for a new worker on the resources a holds (or anew,
// when its node is gone). The queue is sent once the worker connects.
func (d *Driver[C, A]) restart(a A, e restart.Effect) {
	d.objs.ReleaseKept(a.ID()) // the dead process's kept mappings; the calls sent again hold them again
	d.host.Unplace(a)
	q := restart.Queue(e, a.Queued(), func(s *task.Spec, discard bool) C { return d.host.Replay(a, s, discard) })
	d.Step(a, actorq.Requeue[C]{Queue: q})
	d.table.ActorPlaced(a.ID(), "") // starting again
	d.host.Place(a)
}

// Checkpoint handles a checkpoint of a's state after call after, taken
// by worker: data, or why it failed when ok is false. The restart core
// decides whether it becomes the actor's checkpoint (save); a failed
// checkpoint is reported and changes nothing.
func (d *Driver[C, A]) Checkpoint(a A, worker string, after ids.TaskID, data []byte, ok bool, why string) {
	if !a.Restartable() || a.Dead() {
		return
	}
	if !ok {
		d.checkpointFailed(a, worker, after, why, nil)
		return
	}
	d.Restart(restart.Checkpointed{Actor: a.ID(), After: after, Data: data})
}

// save stores the checkpoint of the restart core's Save effect e and
// tells the core it is saved.
func (d *Driver[C, A]) save(e restart.Effect) {
	if err := d.ckpts.SaveCheckpoint(e.Actor, e.Data); err != nil {
		if a, ok := d.actors[e.Actor]; ok {
			if worker, ok := d.host.Worker(a); ok {
				d.checkpointFailed(a, worker, e.Task, err.Error(), err)
			}
		}
		return
	}
	d.Restart(restart.Saved{Actor: e.Actor, After: e.Task})
}

// checkpointFailed reports that a's checkpoint after call tid failed
// (msg, cause): the previous one stays in force.
func (d *Driver[C, A]) checkpointFailed(a A, worker string, tid ids.TaskID, msg string, cause error) {
	d.host.Report(&task.TaskError{Function: a.Type() + ".Checkpoint", Worker: worker,
		Message: fmt.Sprintf("checkpointing actor %s after call %s failed (the previous checkpoint stays in force): %s", a.ID(), tid, msg), Cause: cause})
}

// endChild kills c, which parent (a NoRestarts type's actor) created,
// as gray.Kill does: parent ended. On a cluster a trial's learner (tune)
// whose node died would otherwise leave its rollout workers on other
// nodes holding their CPUs, with no one left to kill them.
func (d *Driver[C, A]) endChild(c, parent A) {
	if c.Dead() {
		return
	}
	d.kill(c, &task.TaskError{Function: c.Type(), Message: "the actor that created it (" + parent.Type() + ") ended", Cause: task.ErrActorDead})
}

// Restarts returns how many times actor id was restarted, and how many
// calls its replay log holds.
func (d *Driver[C, A]) Restarts(id ids.ActorID) (restarts, logged int) { return d.rs.Restarts(id) }

// Logged reports whether call tid of actor id is in its replay log.
func (d *Driver[C, A]) Logged(id ids.ActorID, tid ids.TaskID) bool { return d.rs.Logged(id, tid) }

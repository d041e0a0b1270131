package node

import (
	"errors"
	"fmt"

	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/task"
)

// Actors that are recreated when their process or node dies
// (gray.MaxRestarts), with their calls replayed in order. The restart
// core (runtime/restart, Node.rs) keeps each such actor's log and decides
// whether it restarts and what its new process runs; the node tells it
// what happens (stepRestart) and carries out its effects here: the queue
// of the restarted actor, its checkpoints, the log's claims on arguments.

// stepRestart feeds the restart core ev and carries out its effects.
func (n *Node) stepRestart(ev restart.Event) {
	n.rs.Step(ev)
	for _, e := range n.rs.Effects() {
		switch e.Kind {
		case restart.Claim:
			n.ob.ClaimLineage(e.Spec)
		case restart.Release:
			n.ob.ReleaseLineage(e.Spec)
		case restart.Restart:
			n.restartActor(n.actors[e.Actor], e)
		case restart.Die:
			if a := n.actors[e.Actor]; a != nil {
				n.actorDied(a, e.Err)
			}
		case restart.Save:
			n.saveCheckpoint(e)
		case restart.DropCheckpoint:
			n.ckpts.DropCheckpoint(e.Actor)
		case restart.End:
			n.endChild(n.actors[e.Actor], n.actors[e.Parent])
		}
	}
}

// enableRestarts starts a's log if its type allows restarts. Called when
// the creation task s is submitted, before its arguments are resolved.
func (n *Node) enableRestarts(a *actor, s *task.Spec, e *task.Entry) {
	n.stepRestart(restart.Created{Actor: a.id, Spec: s, MaxRestarts: e.MaxRestarts, NoRestarts: e.NoRestarts})
	if n.rs.Restartable(a.id) {
		n.stepActor(a, actorq.Restartable{})
	}
}

// logSend records method call p as it is sent to a's worker (before its
// arguments are resolved).
func (n *Node) logSend(a *actor, p *pending) {
	if a.Restartable() {
		n.stepRestart(restart.Sent{Actor: a.id, Call: p.spec})
	}
}

// logDone records that call p of a ran.
func (n *Node) logDone(a *actor, p *pending) {
	if a.Restartable() {
		n.stepRestart(restart.Done{Actor: a.id, ID: p.spec.ID})
	}
}

// actorLost handles the death of a's process (why): a restarts, or dies.
// nodeLost says its node died (or may have: a worker on another node),
// which a cluster's actors survive by default.
func (n *Node) actorLost(a *actor, why *task.TaskError, nodeLost bool) {
	ev := restart.Died{Actor: a.id, Why: why, NodeLost: nodeLost,
		Final: a.Dead() || a.Killed() || n.closed || n.spawnErr != nil || a.Draining() && a.Idle()}
	if n.rs.Saved(a.id) {
		data, ok, err := n.ckpts.Checkpoint(a.id)
		if err == nil && !ok {
			err = errors.New("none is stored")
		}
		ev.Checkpoint, ev.CheckpointErr = data, err
	}
	n.stepRestart(ev)
}

// replayDone handles the result of p, a call run again only to rebuild
// a's state (or the restore of a checkpoint): its returns were stored the
// first time, so these are dropped.
func (n *Node) replayDone(a *actor, w *proc, p *pending, objs []task.Object) {
	n.unpinTask(p)
	n.abortReserved(w)
	n.logDone(a, p)
	if p.spec.Kind == task.KindActorRestore && len(objs) > 0 && objs[0].Err != nil {
		e := objs[0].Err
		n.actorDied(a, &task.TaskError{Function: a.typ, Worker: w.name, Message: "restoring its checkpoint after a restart failed: " + firstLine(e.Message), Cause: e})
	}
}

// restartActor carries out the restart core's Restart effect e for a:
// it queues, in front of the calls not yet sent, the creation task, the
// restore of its checkpoint and the calls to replay (restart.Queue), and
// asks the scheduling core for a new worker on the resources a holds (or
// anew, when its node is gone). pump sends the queue once the worker
// connects.
func (n *Node) restartActor(a *actor, e restart.Effect) {
	n.ob.ReleaseKept(a.id) // the dead process's kept mappings; the calls sent again hold them again
	for _, p := range a.Inflight() {
		n.unpinTask(p) // its call is in the replay, if it was a method call
	}
	q := restart.Queue(e, a.Queued(), func(s *task.Spec, discard bool) *pending { return n.replayPending(a, s, discard) })
	n.stepActor(a, actorq.Requeue[*pending]{Queue: q})
	a.w = nil
	n.ctrl.ActorPlaced(a.id, "") // starting again
	n.core.RestartActor(a.id, a.res)
	n.step()
}

// replayPending makes a pending task that runs s (the record of a call as
// submitted, or the restore of a checkpoint) again on a restarted actor;
// discard drops its results.
func (n *Node) replayPending(a *actor, s *task.Spec, discard bool) *pending {
	c := *s
	c.Args = append([]task.Arg(nil), s.Args...)
	e, _ := task.Lookup(s.Func)
	p := &pending{spec: &c, entry: e, actor: a, again: true, discard: discard}
	n.needArgs(p)
	return p
}

// checkpoint handles w's MsgCheckpoint m: the state of w's actor after
// call m.After. The restart core decides whether it becomes the actor's
// checkpoint (saveCheckpoint); a failed checkpoint is reported and
// changes nothing.
func (n *Node) checkpoint(w *proc, m pool.Checkpoint) {
	n.mu.Lock()
	defer n.unlockFor(w)
	a := w.actor
	if a == nil || !a.Restartable() || a.Dead() {
		return
	}
	if !m.OK {
		n.checkpointFailed(a, w, m.After, m.Why, nil)
		return
	}
	n.stepRestart(restart.Checkpointed{Actor: a.id, After: m.After, Data: m.Data})
}

// saveCheckpoint stores the checkpoint of the restart core's Save effect
// e and tells the core it is saved.
func (n *Node) saveCheckpoint(e restart.Effect) {
	if err := n.ckpts.SaveCheckpoint(e.Actor, e.Data); err != nil {
		if a := n.actors[e.Actor]; a != nil && a.w != nil {
			n.checkpointFailed(a, a.w, e.Task, err.Error(), err)
		}
		return
	}
	n.stepRestart(restart.Saved{Actor: e.Actor, After: e.Task})
}

// checkpointFailed reports that a's checkpoint after call tid failed
// (msg, cause): the previous one stays in force.
func (n *Node) checkpointFailed(a *actor, w *proc, tid ids.TaskID, msg string, cause error) {
	e := &task.TaskError{Function: a.typ + ".Checkpoint", Worker: w.name,
		Message: fmt.Sprintf("checkpointing actor %s after call %s failed (the previous checkpoint stays in force): %s", a.id, tid, msg), Cause: cause}
	n.ctrl.AddError(e)
	n.errQ = append(n.errQ, e)
}

// endChild kills c, which parent (a NoRestarts type's actor) created,
// as gray.Kill does: parent ended. On a cluster a trial's learner (tune)
// whose node died would otherwise leave its rollout workers on other
// nodes holding their CPUs, with no one left to kill them.
func (n *Node) endChild(c, parent *actor) {
	if c == nil || c.Dead() || parent == nil {
		return
	}
	quiet := n.quiet
	n.quiet = true
	n.stepActor(c, actorq.Kill{Why: &task.TaskError{Function: c.typ, Message: "the actor that created it (" + parent.typ + ") ended", Cause: task.ErrActorDead}})
	n.quiet = quiet
}

// Kind implements restart.Call.
func (p *pending) Kind() task.Kind { return p.spec.Kind }

// Restarts returns how many times actor id was restarted, and how many
// calls its replay log holds (for tests and inspection).
func (n *Node) Restarts(id ids.ActorID) (restarts, logged int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rs.Restarts(id)
}

package node

import (
	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// An actor's calls are queued, sent and failed by its actorq.Actor (the
// actor record embeds it); this file carries out what it decides.

// Spec implements actorq.Call: the task as it will be sent.
func (p *pending) Spec() *task.Spec { return p.spec }

// Again implements actorq.Call: p runs again on a restarted actor.
func (p *pending) Again() bool { return p.again }

// newActor returns the record of the actor creation task s makes (e is
// its type's entry), with nothing queued.
func (n *Node) newActor(s *task.Spec, e *task.Entry) *actor {
	a := &actor{id: s.ID, typ: s.Func, res: task.Res(s, e)}
	a.Actor = actorq.New(s.ID, s.Func, n.callArgs)
	return a
}

// callArgs answers the actor queue about call p's arguments: wait, they
// do not all exist yet (or one was lost with its node since: the call is
// sent once it is rebuilt); failed, one failed.
func (n *Node) callArgs(p *pending) (wait bool, failed *task.TaskError) {
	if p.args.Waiting() {
		return true, nil
	}
	if p.args.Failed() == nil && n.argsLost(p) && p.args.Waiting() {
		return true, nil
	}
	return false, p.args.Failed()
}

// up reports whether a's worker is connected: its calls can go out.
func up(a *actor) bool { return a.w != nil && a.w.Connected() }

// pump sends an actor's queued calls whose arguments exist, in order.
func (n *Node) pump(a *actor) { n.stepActor(a, actorq.Pump{Up: up(a)}) }

// actorDied ends a for why: its calls fail, its resources are freed and
// its process stops. Nothing when a is dead already.
func (n *Node) actorDied(a *actor, why *task.TaskError) { n.stepActor(a, actorq.End{Why: why}) }

// returned takes the result of task tid off a's calls in flight: the call
// it belongs to, or nil when a was killed (its calls failed already).
func (n *Node) returned(a *actor, tid ids.TaskID) *pending {
	a.Step(actorq.Returned{ID: tid})
	for _, e := range a.Effects() {
		if e.Kind == actorq.Ran {
			return e.Call
		}
	}
	return nil
}

// stepActor feeds a's queue ev and carries out its effects.
func (n *Node) stepActor(a *actor, ev actorq.Event) {
	a.Step(ev)
	for _, e := range a.Effects() {
		switch e.Kind {
		case actorq.Send:
			n.logSend(a, e.Call)
			n.holdKept(a, e.Call.spec)
			n.exec(a.w, e.Call, a.gpus)
		case actorq.ArgFailed:
			n.finishErr(e.Call, argErr(e.Call))
		case actorq.Unsent:
			n.ob.Unsent(e.Call.spec)
		case actorq.Died:
			n.answerDirect(a) // its direct callers go through the driver
			n.ctrl.ActorDied(a.id, e.Err.Message)
		case actorq.Fail:
			// A killed actor's calls hold ErrActorDead, but that is no
			// failure to print or list.
			quiet := n.quiet
			n.quiet = quiet || e.Quiet
			n.finishErr(e.Call, e.Err)
			n.quiet = quiet
		case actorq.Gone:
			n.actorGone(a)
		}
	}
}

// actorGone frees what dead actor a held and stops its process.
func (n *Node) actorGone(a *actor) {
	n.ob.ReleaseKept(a.id)
	n.core.ActorGone(a.id)
	// Dead for good: its log's claims end; the actors it created end
	// with it when it allows no restarts.
	n.stepRestart(restart.Dropped{Actor: a.id})
	if w := a.w; w != nil && !w.dead {
		_ = n.append(w, task.MsgExit, nil) // (nothing if it never connected)
		w.Kill()
		if w.node != sched.Local {
			n.remote.cfg.Remote.StopWorker(w.node, w.id)
		}
	}
	n.step()
}

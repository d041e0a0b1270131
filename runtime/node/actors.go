package node

import (
	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/actors"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/restart"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// The actors' queues (runtime/actorq) and restarts (runtime/restart) are
// driven by runtime/actors (Node.acts); this file is the node's side: the
// actors.Host it acts through, and the calls the rest of the node makes.

// Spec implements actorq.Call: the task as it will be sent.
func (p *pending) Spec() *task.Spec { return p.spec }

// Again implements actorq.Call: p runs again on a restarted actor.
func (p *pending) Again() bool { return p.again }

// Kind implements restart.Call.
func (p *pending) Kind() task.Kind { return p.spec.Kind }

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
func (n *Node) pump(a *actor) { n.acts.Step(a, actorq.Pump{Up: up(a)}) }

// The node's other files step actors and the restart core through these.
func (n *Node) stepActor(a *actor, ev actorq.Event)                  { n.acts.Step(a, ev) }
func (n *Node) stepRestart(ev restart.Event)                         { n.acts.Restart(ev) }
func (n *Node) actorDied(a *actor, why *task.TaskError)              { n.acts.End(a, why) }
func (n *Node) enableRestarts(a *actor, s *task.Spec, e *task.Entry) { n.acts.Created(a, s, e) }
func (n *Node) logDone(a *actor, p *pending)                         { n.acts.Ran(a, p) }

// returned takes the result of task tid off a's calls in flight: the call
// it belongs to, or nil when a was killed (its calls failed already).
func (n *Node) returned(a *actor, tid ids.TaskID) *pending {
	p, _ := n.acts.Returned(a, tid)
	return p
}

// actorLost handles the death of a's process (why): a restarts, or dies.
// nodeLost says its node died (or may have: a worker on another node).
func (n *Node) actorLost(a *actor, why *task.TaskError, nodeLost bool) {
	n.acts.Lost(a, why, nodeLost, n.closed || n.spawnErr != nil)
}

// replayDone handles the result of p, a call run again only to rebuild
// a's state (or the restore of a checkpoint): its returns were stored the
// first time, so these are dropped.
func (n *Node) replayDone(a *actor, w *proc, p *pending, objs []task.Object) {
	n.unpinTask(p)
	n.abortReserved(w)
	var failed *task.TaskError
	if len(objs) > 0 {
		failed = objs[0].Err
	}
	n.acts.Replayed(a, p, w.name, failed)
}

// checkpoint handles w's MsgCheckpoint m: the state of w's actor after
// call m.After.
func (n *Node) checkpoint(w *proc, m pool.Checkpoint) {
	n.mu.Lock()
	defer n.unlockFor(w)
	if a := w.actor; a != nil {
		n.acts.Checkpoint(a, w.name, m.After, m.Data, m.OK, m.Why)
	}
}

// killQuietly kills a for why (gray.Kill, or its creator's end): its
// calls' references hold ErrActorDead, but that is no failure to print
// or list.
func (n *Node) killQuietly(a *actor, why *task.TaskError) {
	quiet := n.quiet
	n.quiet = true
	n.acts.Step(a, actorq.Kill{Why: why})
	n.quiet = quiet
}

// Restarts returns how many times actor id was restarted, and how many
// calls its replay log holds (for tests and inspection).
func (n *Node) Restarts(id ids.ActorID) (restarts, logged int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.acts.Restarts(id)
}

// actorHost is the node as runtime/actors acts through it
// (actors.Host), under the node's lock. Its methods are actors.Host's,
// documented there; what runtime/actors asks of the objects goes to
// objects.Keeper itself (actors.Objects).
type actorHost struct{ n *Node }

func (h actorHost) Actor(id ids.ActorID) (*actor, bool) {
	a := h.n.actors[id]
	return a, a != nil
}

func (h actorHost) Send(a *actor, p *pending) {
	h.n.holdKept(a, p.spec)
	h.n.exec(a.w, p, a.gpus)
}

func (h actorHost) Fail(p *pending, err *task.TaskError, quiet bool) {
	was := h.n.quiet
	h.n.quiet = was || quiet
	h.n.finishErr(p, err)
	h.n.quiet = was
}

func (h actorHost) ArgFailed(p *pending) { h.n.finishErr(p, argErr(p)) }

func (h actorHost) Died(a *actor, err *task.TaskError) {
	h.n.answerDirect(a) // its direct callers go through the driver
	h.n.ctrl.ActorDied(a.id, err.Message)
}

func (h actorHost) Free(a *actor) { h.n.core.ActorGone(a.id) }

func (h actorHost) Stop(a *actor) {
	if w := a.w; w != nil && !w.dead && !h.n.drainDirect(a) {
		_ = h.n.append(w, task.MsgExit, nil) // (nothing if it never connected)
		w.Kill()
		if w.node != sched.Local {
			h.n.remote.cfg.Remote.StopWorker(w.node, w.id)
		}
	}
	h.n.step()
}

func (h actorHost) Unplace(a *actor) {
	for _, p := range a.Inflight() {
		h.n.unpinTask(p) // its call is in the replay, if it was a method call
	}
}

func (h actorHost) Place(a *actor) {
	a.w = nil
	h.n.ctrl.ActorPlaced(a.id, "") // starting again
	h.n.core.RestartActor(a.id, a.res)
	h.n.step()
}

func (h actorHost) Replay(a *actor, s *task.Spec, discard bool) *pending {
	c := *s
	c.Args = append([]task.Arg(nil), s.Args...)
	e, _ := task.Lookup(s.Func)
	p := &pending{spec: &c, entry: e, actor: a, again: true, discard: discard}
	h.n.needArgs(p)
	return p
}

func (h actorHost) Worker(a *actor) (string, bool) {
	if a.w == nil {
		return "", false
	}
	return a.w.name, true
}

func (h actorHost) Report(e *task.TaskError) {
	h.n.ctrl.AddError(e)
	h.n.errQ = append(h.n.errQ, e)
}

func (h actorHost) Kill(a *actor, why *task.TaskError) { h.n.killQuietly(a, why) }

var _ actors.Host[*pending, *actor] = actorHost{}

package node

import (
	"github.com/gray-ml/gray/runtime/actorq"
	"github.com/gray-ml/gray/runtime/actors"
	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/pool"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// The actors' queues (runtime/actorq) and restarts (runtime/restart) are
// driven by runtime/actors (Node.acts), which keeps the node's actors and
// decides what an actor task submitted becomes; this file is the node's
// side: its record of an actor's call, the actors.Host it acts through,
// and the messages of an actor's worker it hands on.

// Spec implements actorq.Call: the task as it will be sent.
func (p *pending) Spec() *task.Spec { return p.spec }

// Again implements actorq.Call: p runs again on a restarted actor.
func (p *pending) Again() bool { return p.again }

// Kind implements restart.Call.
func (p *pending) Kind() task.Kind { return p.spec.Kind }

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

// checkpoint handles w's MsgCheckpoint m: the state of w's actor after
// call m.After.
func (n *Node) checkpoint(w *proc, m pool.Checkpoint) {
	n.mu.Lock()
	defer n.unlockFor(w)
	if a := w.actor; a != nil {
		n.acts.Checkpoint(a, w.name, m.After, m.Data, m.OK, m.Why)
	}
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

func (h actorHost) New(s *task.Spec, e *task.Entry) *actor {
	a := &actor{id: s.ID, typ: s.Func, res: task.Res(s, e)}
	a.Actor = actorq.New(s.ID, s.Func, h.n.callArgs)
	return a
}

func (h actorHost) Up(a *actor) bool { return a.w != nil && a.w.Connected() }

func (h actorHost) Wait(a *actor) {
	h.n.core.Step(sched.ActorWaits{ID: a.id, Res: a.res})
	h.n.step()
}

func (h actorHost) Send(a *actor, p *pending) {
	// a claims each Keep argument of the call in shared memory.
	h.n.ob.HoldKept(a.id, a.w != nil && a.w.node != sched.Local, p.spec)
	h.n.exec(a.w, p, a.gpus)
}

func (h actorHost) Fail(p *pending, err *task.TaskError) { h.n.finishErr(p, err) }
func (h actorHost) ArgFailed(p *pending)                 { h.n.finishErr(p, p.args.Failure(p.spec.Func)) }

func (h actorHost) Quietly(f func()) {
	was := h.n.quiet
	h.n.quiet = true
	f()
	h.n.quiet = was
}

func (h actorHost) Died(a *actor, _ *task.TaskError) {
	h.n.answerDirect(a) // its direct callers go through the driver
}

func (h actorHost) Free(a *actor) { h.n.core.Step(sched.ActorGone{ID: a.id}) }

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
	h.n.core.Step(sched.ActorRestart{ID: a.id, Res: a.res})
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

func (h actorHost) Stopping() bool { return h.n.closed || h.n.spawnErr != nil }

var _ actors.Host[*pending, *actor] = actorHost{}

package node

import (
	"fmt"
	"os"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// Submit queues a task submitted by the driver or a worker. A task that can
// never run (unregistered, impossible resources, unknown actor) is an error,
// which is also stored as the value of its returns.
func (n *Node) Submit(s *task.Spec) error {
	n.mu.Lock()
	err := n.submitLocked(s)
	n.unlock()
	n.flushErrors()
	return err
}

func (n *Node) submitLocked(s *task.Spec) error {
	if n.closed {
		return ErrShutdown
	}
	if n.spawnErr != nil {
		n.storeReturns(s, n.spawnErr.For(s.Func))
		return n.spawnErr
	}
	e, err := task.Lookup(s.Func)
	if err == nil && s.Kind != e.Kind {
		err = fmt.Errorf("%q is registered as a different kind of remote (function, actor type or method)", s.Func)
	}
	if err == nil && s.Kind != task.KindActorMethod {
		// On a cluster, a node that can hold it may join: it may wait for
		// one (sched.Cluster.Admit).
		var first bool
		if first, err = n.core.Admit(s.Func, task.Res(s, e), n.remote != nil); first {
			fmt.Fprintln(os.Stderr, sched.WaitNote(s.Func, task.Res(s, e)))
		}
	}
	if err == nil {
		err = n.acts.Check(s) // an actor that exists already, or not here
	}
	if err != nil {
		te := &task.TaskError{Function: s.Func, Message: err.Error(), Cause: err}
		n.storeReturns(s, te)
		return err
	}
	n.ctrl.TaskSubmitted(s)
	p := &pending{spec: s, entry: e}
	if s.Kind == task.KindFunc && n.shared != nil {
		// Lineage needs the spec as submitted. Only reference arguments
		// change when the task is sent (objects.Keeper.Send), so a spec without
		// them is its own record, which saves a copy per queued task.
		p.record = s
		if hasRefArgs(s) {
			orig := *s
			orig.Args = append([]task.Arg(nil), s.Args...)
			p.record = &orig
			// Its arguments are kept for its lineage until it ends
			// (objects/lineage.go).
			n.ob.ClaimLineage(p.record)
			p.lineageHeld = true
		}
	}
	switch s.Kind {
	case task.KindActorCreate:
		p.actor = n.acts.Create(s, e)
	case task.KindActorMethod:
		p.actor = n.acts.Actor(s.Actor())
	}
	n.needArgs(p)
	if s.Kind != task.KindFunc {
		n.acts.Submit(p.actor, p)
	} else if !p.args.Waiting() {
		n.ready(p)
	}
	return nil
}

// ready handles a normal task whose arguments all exist.
func (n *Node) ready(p *pending) {
	if p.args.Failed() != nil {
		n.finishErr(p, p.args.Failure(p.spec.Func))
		return
	}
	n.submitNear(p, p.entry.MaxCalls == 0)
	n.step()
}

// step carries out the scheduling core's effects, and those of the events
// they cause in turn, until none is left.
func (n *Node) step() {
	for n.core.Pending() || n.waits.Pending() {
		for _, e := range n.core.Effects() {
			n.apply(e)
		}
		for a, ok := n.waits.Next(); ok; a, ok = n.waits.Next() {
			n.reqs.Answer(a)
		}
	}
}

// apply carries out one effect of the scheduling core.
func (n *Node) apply(e sched.Effect[*pending]) {
	switch e.Kind {
	case sched.Run:
		n.send(n.workers[e.Worker], e.Task, e.GPUs)
	case sched.Spawn:
		n.spawn(nil, e.Worker)
	case sched.StartActor:
		a := n.acts.Actor(e.Actor)
		if a == nil || a.Dead() {
			n.core.Step(sched.ActorGone{ID: e.Actor})
			return
		}
		a.gpus = e.GPUs
		if e.Reused {
			n.hostActor(a, e.Worker)
			return
		}
		n.spawn(a, e.Worker)
	case sched.Exit:
		if w := n.workers[e.Worker]; w != nil {
			_ = n.append(w, task.MsgExit, nil)
		}
	case sched.Recall:
		if w := n.workers[e.Worker]; w != nil {
			_ = n.append(w, task.MsgRecall, nil)
		}
	case sched.Resume:
		n.waits.Resume(e.Worker)
	case sched.Orphan:
		n.orphaned(e.Task)
	case sched.OrphanActor:
		if a := n.acts.Actor(e.Actor); a != nil && n.gone != nil {
			why := &task.TaskError{Function: a.typ, Message: "its " + n.gone.Why, Cause: task.ErrWorkerDied} // "its node b died (...)"
			n.acts.Lost(a, why, true)
		}
	case sched.Refuse:
		n.finishErr(e.Task, n.spawnErr.For("(worker start)"))
	case sched.RefuseActor:
		if a := n.acts.Actor(e.Actor); a != nil {
			n.acts.End(a, n.spawnErr.For("(worker start)"))
		}
	}
}

// orphaned handles task p, whose worker or node is gone (Node.gone says
// which and how): the recovery core fails it, or, when it ran on another
// node (which may have died with its worker), runs it again elsewhere.
func (n *Node) orphaned(p *pending) {
	if n.leaseOrphaned(p) {
		return // its worker died; the owner resends the tasks (direct.go)
	}
	ev := recovery.TaskLost[*pending]{Why: "its worker is gone", Local: true} // no n.gone: never
	if n.gone != nil {
		ev = *n.gone
	}
	ev.Task = p
	n.recover(ev)
}

// send queues p at pool worker w, which may use the GPUs gpus.
func (n *Node) send(w *proc, p *pending, gpus []int) {
	if n.argsLost(p) {
		// It waits for them again, or fails (argsLost), and leaves the
		// worker: given back if p was to run now, else taken back from
		// behind its running task.
		if run, ok := n.core.Running(w.id); ok && run == p {
			n.core.Step(sched.TaskDone{W: w.id, Retiring: false})
		} else {
			n.core.Step(sched.Withdrawn[*pending]{W: w.id, Which: func(q *pending) bool { return q == p }})
		}
		if !p.args.Waiting() {
			n.finishErr(p, p.args.Failure(p.spec.Func))
		}
		return
	}
	n.exec(w, p, gpus)
}

// exec sends p, whose arguments all exist, to worker w (a pool worker or
// p's actor's), which may use the GPUs gpus.
func (n *Node) exec(w *proc, p *pending, gpus []int) {
	s := p.spec
	n.sendLocate(w, n.ob.Send(w.node, s))
	s.SetGPUIDs(gpus)
	p.sent = n.timer.Now()
	if n.starts != nil {
		n.starts.TaskStarted(s.ID, n.rec.Name(w.node)) // "": this machine (sched.Local has no name)
	}
	n.lastExec = w
	// A broken connection is noticed by the reader, which fails the task.
	_ = n.append(w, task.MsgExec, func(b []byte) []byte { return task.AppendSpec(b, s) })
}

// finishErr fails every return of p with e.
func (n *Node) finishErr(p *pending, e *task.TaskError) {
	rebuilding := n.rec.Rebuilding(p.spec.ID)
	n.rec.Step(recovery.Ended[*pending]{Task: p, ID: p.spec.ID})
	n.ob.Unsent(p.spec)
	n.releaseLineage(p)
	if rebuilding {
		n.failRebuild(p.spec, e)
	} else {
		n.storeReturns(p.spec, e)
	}
	n.ctrl.TaskFinished(p.spec.ID, e)
}

func (n *Node) storeReturns(s *task.Spec, e *task.TaskError) {
	if s.Kind == task.KindActorCreate {
		n.constructed(s) // the failure reaches the actor's calls instead
	} else {
		for i := range s.Returns() {
			n.putLocked(s.Return(i), task.Object{Err: e})
		}
	}
	if n.quiet {
		return
	}
	n.ctrl.AddError(e)
	n.errQ = append(n.errQ, e)
}

// flushErrors reports failures collected under the lock.
func (n *Node) flushErrors() {
	n.mu.Lock()
	q := n.errQ
	n.errQ = nil
	n.unlock()
	if n.cfg.OnError != nil {
		for _, e := range q {
			n.cfg.OnError(e)
		}
	}
}

// Kill ends an actor now: queued and running calls fail and its resources
// are released (actors.Driver.Kill).
func (n *Node) Kill(id ids.ActorID) error {
	n.mu.Lock()
	err := n.acts.Kill(id)
	n.unlock()
	n.flushErrors()
	return err
}

// Release ends an actor once its queued calls are done: the program holds
// no handle to it any more (actors.Driver.Release).
func (n *Node) Release(id ids.ActorID) {
	n.mu.Lock()
	defer n.unlock()
	if !n.closed {
		n.acts.Release(id)
	}
}

func hasRefArgs(s *task.Spec) bool {
	for i := range s.Args {
		if s.Args[i].IsRef {
			return true
		}
	}
	return false
}

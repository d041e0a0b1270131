package node

import (
	"errors"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objects"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// The node's glue to its objects part (runtime/objects, Node.ob): on an
// event it asks the Keeper, which decides and carries out what concerns
// objects; what concerns tasks comes back through objectTasks.

// objectTasks is the node as the Keeper's objects.Tasks.
type objectTasks struct{ n *Node }

func (t objectTasks) Waited(id ids.ObjectID) bool { return t.n.waits.Waiting(id) }

// Stored wakes the Gets and Waits waiting for id.
func (t objectTasks) Stored(id ids.ObjectID, _ task.Object) {
	if n := t.n; n.waits.Waiting(id) {
		n.waits.Stored(id)
		n.step()
	}
}

// Ready sends task p, whose arguments all exist now (or one failed), on
// its way: an actor's call in its actor's order, a task to the core.
func (t objectTasks) Ready(p *pending) {
	if p.actor != nil {
		t.n.acts.Pump(p.actor)
	} else {
		t.n.ready(p)
	}
}

// Apply carries out an effect of the recovery core on tasks and workers.
func (t objectTasks) Apply(e recovery.Effect[*pending]) {
	n := t.n
	switch e.Kind {
	case recovery.GiveUp:
		n.ctrl.AddError(e.Err)
		n.errQ = append(n.errQ, e.Err)
	case recovery.Resubmit:
		_ = n.submitLocked(e.Spec)
	case recovery.Rerun:
		if p := e.Task; e.Refetch {
			n.refetchArgs(p, true)
		} else if !n.refetchArgs(p, false) {
			n.core.Step(sched.Submitted[*pending]{Task: p, Res: &p.entry.Res, Pipelined: false})
		}
	case recovery.Fail:
		n.finishErr(e.Task, &task.TaskError{Function: e.Task.spec.Func, Worker: e.Worker, Message: e.Message, Cause: task.ErrWorkerDied})
	case recovery.StopSpawning:
		// Start no more workers, and fail what waits for one: it comes
		// back from the core as Refuse effects.
		n.spawnErr = &recovery.NoWorkers{Count: e.Count, Last: e.Message}
		n.core.Step(sched.SpawnFailed{})
		n.step()
	case recovery.DropNode:
		go n.NodeGone(e.Node, e.Message)
	}
}

// Calls the worker side makes (procs.go, requests.go, remote.go), each
// carried out by the Keeper.

func (n *Node) recover(ev recovery.Event) []recovery.Effect[*pending] { return n.ob.Recover(ev) }
func (n *Node) putLocked(id ids.ObjectID, o task.Object)              { n.ob.Put(id, o) }
func (n *Node) constructed(s *task.Spec)                              { n.ob.ReleaseChildren(s.Return(0)) }
func (n *Node) unpinTask(p *pending)                                  { n.ob.UnpinTask(p.spec.ID) }
func (n *Node) unpinReads(w *proc)                                    { n.ob.UnpinAll(workerHolder(w), objtable.ReadPin) }
func (n *Node) abortReserved(w *proc)                                 { n.ob.AbortReserved(workerHolder(w)) }
func (n *Node) needArgs(p *pending)                                   { n.ob.NeedArgs(p, p.spec) }
func (n *Node) argsLost(p *pending) bool                              { return n.ob.ArgsLost(p, p.spec) }
func workerHolder(w *proc) objtable.Holder                            { return objtable.WorkerHolder(int(w.id)) }

// objWorker is w as the Keeper knows it: who delivers objects.
func objWorker(w *proc) objects.Worker {
	return objects.Worker{Holder: workerHolder(w), Name: w.name, Node: w.node}
}

// objSender is worker w as the sender of a message about objects, which
// the Keeper carries out (objects.Keeper.Handle).
type objSender struct {
	n *Node
	w *proc
}

func (s objSender) Worker() objects.Worker { return objWorker(s.w) }
func (s objSender) Dead() bool             { return s.w.dead }
func (s objSender) Unlock()                { s.n.unlockFor(s.w) }
func (s objSender) Actor() (ids.ActorID, bool) {
	if a := s.w.actor; a != nil {
		return a.id, true
	}
	return ids.ActorID{}, false
}
func (s objSender) Reply(typ byte, fn func([]byte) []byte) { _ = s.n.append(s.w, typ, fn) }
func (s objSender) Contain(parent ids.ObjectID, children []ids.ObjectID) {
	s.n.contain(parent, children) // direct.go: a direct result's may come late
}

// retryPull runs task p again when its worker could not pull one of its
// arguments (the Keeper decides); it reports whether it did.
func (n *Node) retryPull(w *proc, p *pending, objs []task.Object) bool {
	return p.spec.Kind == task.KindFunc && n.ob.RetryPull(p, w.name, objs)
}

// locate queues, before a message to worker w that names the shared
// objects oids, a MsgLocate for those its node's store may lack.
func (n *Node) locate(w *proc, oids []ids.ObjectID) { n.sendLocate(w, n.ob.Locate(w.node, oids)) }

func (n *Node) sendLocate(w *proc, locs []objects.Location) {
	if len(locs) > 0 {
		_ = n.append(w, task.MsgLocate, func(b []byte) []byte { return objects.AppendLocate(b, locs) })
	}
}

// The tasks' side (submit.go, actors.go).

// refetchArgs prepares task p, which is to run again, when one of the
// shared arguments it was sent is lost (or always, with force): its
// arguments are claimed again, so the lost ones are rebuilt first
// (objects.Keeper.Refetch). It reports whether it took p over (p is then
// submitted once its arguments exist, or failed).
func (n *Node) refetchArgs(p *pending, force bool) bool {
	took, err := n.ob.Refetch(p, p.spec, p.lineage(), force)
	if err != nil {
		n.finishErr(p, err)
	} else if took && !p.args.Waiting() {
		n.ready(p)
	}
	return took
}

// submitNear hands task p to the scheduling core, preferring the node that
// holds the most bytes of its shared arguments (objects.Keeper.Near) when
// that node has room (sched.SubmittedNear).
func (n *Node) submitNear(p *pending, pipelined bool) {
	if k, ok := n.ob.Near(p.spec.Args); ok {
		n.core.Step(sched.SubmittedNear[*pending]{Task: p, Res: &p.entry.Res, Pipelined: pipelined, Near: k})
		return
	}
	if depth := n.timer.Depth(p.entry); pipelined && depth > 0 {
		n.core.Step(sched.SubmittedPacked[*pending]{Task: p, Res: &p.entry.Res, Depth: depth})
		return
	}
	n.core.Step(sched.Submitted[*pending]{Task: p, Res: &p.entry.Res, Pipelined: pipelined})
}

// releaseLineage ends p's own Lineage claims (objects.Keeper.ClaimLineage,
// taken at Submit), when it ends.
func (n *Node) releaseLineage(p *pending) {
	if p.lineageHeld {
		p.lineageHeld = false
		n.ob.ReleaseLineage(p.record)
	}
}

// failRebuild stores the failure e of a rebuild of s that ended without a
// result, and reports it.
func (n *Node) failRebuild(s *task.Spec, e *task.TaskError) {
	n.ob.FailRebuild(s, e)
	if !n.quiet {
		n.ctrl.AddError(e)
		n.errQ = append(n.errQ, e)
	}
}

// Check verifies the object table's invariants (objects.Keeper.Check), the
// Get/Wait matching's (sched.Waits.Check), and on a cluster that no run
// count is kept for a task that ended (checkRetries). Tests call it.
func (n *Node) Check() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return errors.Join(n.waits.Check(), n.checkRetries(), n.ob.Check(func(h objtable.Holder) bool {
		switch h.Kind {
		case objtable.Worker:
			for id, w := range n.workers {
				if objtable.WorkerHolder(int(id)) == h {
					return !w.dead
				}
			}
			return false
		case objtable.Actor:
			for a := range n.acts.Actors() {
				if objtable.ActorHolder(a.id) == h {
					return !a.Dead()
				}
			}
			return false
		}
		return true // objects hold their children until they are deleted; tasks their arguments until they end
	}))
}

package node

import (
	"fmt"
	"os"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/sched"
	"github.com/gray-ml/gray/runtime/task"
)

// What the node does when something is lost is decided by the recovery
// core (runtime/recovery): which results are rebuilt from lineage, how
// often, when an object is lost for good (task.ObjectLostError, one of
// the task.ErrLost reasons), when a task whose worker or node died runs
// again, when workers that never connect stop the node. This file feeds
// it events and carries out its effects.

// MaxRebuilds is how many times in a row rebuilding an object from its
// lineage may fail (its task failed, or its worker died) before the object
// is lost for good (task.ErrLostRetriesExhausted). A rebuild that failed
// for want of room in the object store does not count: it is retried once
// there is room.
const MaxRebuilds = recovery.DefaultRebuilds

// maxRetries bounds how often a task whose remote worker or node died is
// run again elsewhere.
const maxRetries = recovery.DefaultRuns

// recover steps the recovery core with ev and carries out its effects, in
// order; it returns them for callers that read what was decided.
func (n *Node) recover(ev recovery.Event) []recovery.Effect[*pending] {
	n.rec.Step(ev)
	es := n.rec.Effects()
	for _, e := range es {
		n.applyRecovery(e)
	}
	return es
}

// applyRecovery carries out one effect of the recovery core.
func (n *Node) applyRecovery(e recovery.Effect[*pending]) {
	switch e.Kind {
	case recovery.Claim:
		for _, r := range e.Refs {
			n.objs.Claim(objtable.Holder{}, r, objtable.Lineage)
		}
	case recovery.Release:
		for _, r := range e.Refs {
			n.unkeep(r)
		}
	case recovery.GiveUp:
		n.ctrl.AddError(e.Err)
		n.errQ = append(n.errQ, e.Err)
	case recovery.Replace:
		n.store.Delete(e.ID)
		n.store.Put(e.ID, e.Object)
	case recovery.Lose:
		n.store.Delete(e.ID)
		n.putLocked(e.ID, e.Object)
	case recovery.Discard:
		n.store.Delete(e.ID)
	case recovery.Resubmit:
		for i := range max(e.Spec.NumReturns, 1) {
			if r := e.Spec.Return(i); n.evicted(r) {
				n.store.Delete(r)
			}
		}
		_ = n.submitLocked(e.Spec)
	case recovery.Rerun:
		p := e.Task
		if e.Refetch {
			n.refetchArgs(p, true)
		} else if !n.refetchArgs(p, false) {
			n.core.Submit(p, &p.entry.Res, false)
		}
	case recovery.Fail:
		n.finishErr(e.Task, &task.TaskError{Function: e.Task.spec.Func, Message: e.Message, Cause: task.ErrWorkerDied})
	case recovery.Locate:
		if t, name := n.remote.cfg.Locations, n.rec.Name(e.Node); t != nil && name != "" {
			if e.Holds {
				t.AddLocation(e.ID, name)
			} else {
				t.RemoveLocation(e.ID, name)
			}
		}
	case recovery.Orphaned:
		if n.shared != nil && n.shared.Contains(storeID(e.ID)) {
			return
		}
		if o, ok := n.store.Get(e.ID); ok && o.Shared && o.Err == nil {
			n.recover(recovery.Lost{ID: e.ID, Why: e.Message, Gone: e.Gone, At: time.Now()})
		}
	case recovery.ReleaseCopies:
		n.releaseCopies(e.ID, e.Nodes)
	case recovery.StopSpawning:
		n.stopSpawning(e.Count, e.Message)
	case recovery.DropNode:
		go n.NodeGone(e.Node, e.Message)
	}
}

// evicted reports whether object id is a shared value that no store holds
// any more: it was evicted, or lost with its node.
func (n *Node) evicted(id ids.ObjectID) bool {
	o, ok := n.store.Get(id)
	return ok && o.Shared && o.Err == nil && !n.shared.Contains(storeID(id)) && !n.rec.HasRemote(id)
}

// releaseCopies tells nodes that freed object id may go, and removes the
// copy one of the driver's workers pulled into its store, never adopted.
func (n *Node) releaseCopies(id ids.ObjectID, nodes []sched.NodeID) {
	o := n.objects()
	if o == nil {
		return
	}
	if n.shared != nil && !n.shared.Contains(storeID(id)) {
		_ = os.Remove(objstore.Path(n.shared.Dir(), storeID(id)))
	}
	if o.ro == nil {
		return
	}
	h := []string{id.String()}
	for _, k := range nodes {
		o.ro.ReleaseObjects(k, h)
	}
}

// stored tells the recovery core that return id of p was stored as o
// (rebuilt: p ran to rebuild it) and returns what to store: o, or its
// loss once rebuilding it failed too often.
func (n *Node) stored(p *pending, id ids.ObjectID, o task.Object, rebuilt bool) task.Object {
	orig := p.lineage()
	if !rebuilt && (!o.Shared || o.Err != nil || orig == nil) {
		return o // nothing to decide (the common case, kept cheap)
	}
	for _, e := range n.recover(recovery.Stored{ID: id, Lineage: orig, Shared: o.Shared, Err: o.Err, Rebuilt: rebuilt, At: time.Now()}) {
		if e.Kind == recovery.GiveUp {
			o = task.Object{Err: e.Err}
		}
	}
	return o
}

// failRebuild stores the failure of a rebuild that ended without a result
// (its worker died, an argument failed): the returns it was rebuilding get
// the error, counted by the recovery core; those not evicted keep their
// value.
func (n *Node) failRebuild(s *task.Spec, e *task.TaskError) {
	for i := range max(s.NumReturns, 1) {
		id := s.Return(i)
		if _, ok := n.store.Get(id); ok {
			continue
		}
		o := task.Object{Err: e}
		for _, x := range n.recover(recovery.Stored{ID: id, Err: e, Rebuilt: true, At: time.Now()}) {
			if x.Kind == recovery.GiveUp {
				o = task.Object{Err: x.Err}
			}
		}
		n.putLocked(id, o)
	}
	if !n.quiet {
		n.ctrl.AddError(e)
		n.errQ = append(n.errQ, e)
	}
}

// stopSpawning stops starting workers once count in a row exited before
// connecting (the last: why), and fails what waits for one.
func (n *Node) stopSpawning(count int, why string) {
	n.spawnErr = fmt.Errorf("gray: %d worker processes in a row exited before connecting to the driver (last: %s); "+
		"the program must call gray.ServeIfWorker() first thing in main (in TestMain for tests) so that it serves tasks when started as a worker", count, why)
	n.core.SpawnFailed() // what waits comes back as Refuse effects
	n.step()
}

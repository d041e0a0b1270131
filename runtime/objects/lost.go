package objects

import (
	"os"
	"time"

	"github.com/gray-ml/gray/runtime/ids"
	"github.com/gray-ml/gray/runtime/objstore"
	"github.com/gray-ml/gray/runtime/objtable"
	"github.com/gray-ml/gray/runtime/recovery"
	"github.com/gray-ml/gray/runtime/task"
)

// What is done when something is lost is decided by the recovery core
// (runtime/recovery): which results are rebuilt from lineage, how often,
// when an object is lost for good (task.ObjectLostError, one of the
// task.ErrLost reasons), when a task whose worker or node died runs
// again, when workers that never connect stop the node. Recover feeds it
// events and carries out the effects on objects; those on tasks and
// workers go to Tasks.Apply.

// Recover steps the recovery core with ev and carries out its effects, in
// order; it returns them for callers that read what was decided.
func (k *Keeper[T]) Recover(ev recovery.Event) []recovery.Effect[T] {
	k.rec.Step(ev)
	es := k.rec.Effects()
	for _, e := range es {
		k.apply(e)
	}
	return es
}

// apply carries out one effect of the recovery core.
func (k *Keeper[T]) apply(e recovery.Effect[T]) {
	switch e.Kind {
	case recovery.Claim:
		for _, r := range e.Refs {
			k.objs.Claim(objtable.Holder{}, r, objtable.Lineage)
		}
	case recovery.Release:
		for _, r := range e.Refs {
			k.Unkeep(r)
		}
	case recovery.Replace:
		k.store.Delete(e.ID)
		k.store.Put(e.ID, e.Object)
	case recovery.Lose:
		k.store.Delete(e.ID)
		k.Put(e.ID, e.Object)
	case recovery.Discard:
		k.store.Delete(e.ID)
	case recovery.Resubmit:
		for i := range e.Spec.Returns() {
			if r := e.Spec.Return(i); k.evicted(r) {
				k.store.Delete(r)
			}
		}
		k.tasks.Apply(e)
	case recovery.Locate:
		if k.remote == nil || k.remote.locs == nil {
			return
		}
		if name := k.rec.Name(e.Node); name != "" {
			if e.Holds {
				k.remote.locs.AddLocation(e.ID, name)
			} else {
				k.remote.locs.RemoveLocation(e.ID, name)
			}
		}
	case recovery.Orphaned:
		if k.local(e.ID) {
			return
		}
		if o, ok := k.store.Get(e.ID); ok && o.Shared && o.Err == nil {
			k.Recover(recovery.Lost{ID: e.ID, Why: e.Message, Gone: e.Gone, At: time.Now()})
		}
	case recovery.ReleaseCopies:
		k.releaseCopies(e.ID, e.Nodes)
	case recovery.ForgetNode:
		if k.remote != nil && k.remote.locs != nil {
			k.remote.locs.ForgetNodeQueued(e.Name)
		}
	default: // GiveUp, Rerun, Fail, StopSpawning, DropNode
		k.tasks.Apply(e)
	}
}

// evicted reports whether object id is a shared value that no store holds
// any more: it was evicted, or lost with its node.
func (k *Keeper[T]) evicted(id ids.ObjectID) bool {
	o, ok := k.store.Get(id)
	return ok && o.Shared && o.Err == nil && !k.shared.Contains(StoreID(id)) && !k.rec.HasRemote(id)
}

// releaseCopies tells nodes that freed object id may go, and removes the
// copy one of the driver's workers pulled into its store, never adopted.
func (k *Keeper[T]) releaseCopies(id ids.ObjectID, nodes []NodeID) {
	r := k.remote
	if r == nil {
		return
	}
	if k.shared != nil && !k.shared.Contains(StoreID(id)) {
		_ = os.Remove(objstore.Path(k.shared.Dir(), StoreID(id)))
	}
	if r.ro == nil {
		return
	}
	h := []string{id.String()}
	for _, n := range nodes {
		r.ro.ReleaseObjects(n, h)
	}
}

// Result tells the recovery core that return id of a task was stored as
// o (rebuilt: the task ran to rebuild it; lineage: the task as submitted,
// for a function task's result, else nil) and returns what to store: o,
// or its loss once rebuilding it failed too often.
func (k *Keeper[T]) Result(id ids.ObjectID, lineage *task.Spec, o task.Object, rebuilt bool) task.Object {
	if !rebuilt && (!o.Shared || o.Err != nil || lineage == nil) {
		return o // nothing to decide (the common case, kept cheap)
	}
	for _, e := range k.Recover(recovery.Stored{ID: id, Lineage: lineage, Shared: o.Shared, Err: o.Err, Rebuilt: rebuilt, At: time.Now()}) {
		if e.Kind == recovery.GiveUp {
			o = task.Object{Err: e.Err}
		}
	}
	return o
}

// FailRebuild stores the failure of a rebuild of s that ended without a
// result (its worker died, an argument failed): the returns it was
// rebuilding get the error, counted by the recovery core; those not
// evicted keep their value.
func (k *Keeper[T]) FailRebuild(s *task.Spec, err *task.TaskError) {
	for i := range s.Returns() {
		id := s.Return(i)
		if _, ok := k.store.Get(id); ok {
			continue
		}
		k.Put(id, k.Result(id, nil, task.Object{Err: err}, true))
	}
}
